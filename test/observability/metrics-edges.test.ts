// @ts-expect-error: no types
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createBreakwaterMetrics } from '../../src/observability/prometheus-metrics.ts';
import { startMetricsServer } from '../../src/observability/metrics-server.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import type { RuntimeConfigInput } from '../../src/runtime/runtime-config.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

interface Family {
  name: string;
  metrics: { labels?: Record<string, string>; value?: string }[];
}
const parse = (text: string) =>
  new Map((parsePrometheusTextFormat(text) as Family[]).map((f) => [f.name, f]));
const sum = (f: Family | undefined, where: (l: Record<string, string>) => boolean = () => true) =>
  (f?.metrics ?? []).filter((m) => where(m.labels ?? {})).reduce((n, m) => n + Number(m.value ?? 0), 0);

const PLATFORM = 'sk-platform-pool-00000000000000000001';
let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({
    profile: {
      seed: 4,
      latency: { minMs: 0, maxMs: 0 },
      acceptAnyKey: false,
      keys: [
        { alias: 'platform', key: PLATFORM, credit: 0 },
        ...Array.from({ length: 20 }, (_, i) => ({
          alias: `u${i}`,
          key: `sk-proj-user${String(i).padStart(2, '0')}00000000000000000000a1b2`,
        })),
      ],
    },
  });
});
afterAll(() => emulator.close());

function byokConfig(): RuntimeConfigInput {
  return {
    endpoints: [emulatorEndpoint(emulator, 'primary', 'openai', 'gpt-4o', PLATFORM)],
    chains: { main: ['primary'] },
    agentDefaults: { maxWaitMs: 2_000 },
    byok: {
      templates: {
        openai: { provider: 'openai', model: 'gpt-4o-mini', baseURL: emulator.baseURL('openai') },
      },
    },
  } as RuntimeConfigInput;
}

describe('metrics probes', () => {
  it('M1: BYOK keys of 20 user sessions → endpoint label values stay bounded (and carry no session ids) after the keys are gone', async () => {
    emulator.reset();
    const supervisor = createSupervisor(byokConfig(), { tracing: false });
    const metrics = createBreakwaterMetrics(supervisor);
    for (let i = 0; i < 20; i++) {
      const session = `user-${i}@example.com`;
      await supervisor.byok.inject(
        session,
        'openai',
        `sk-proj-user${String(i).padStart(2, '0')}00000000000000000000a1b2`,
      );
      const a = supervisor.spawnAgent({ name: `agent-${i}`, chain: 'main', session });
      await a.ask('hello');
      supervisor.byok.endSession(session);
      a.stop();
    }
    const m = parse(await metrics.registry.metrics());
    const endpoints = new Set(
      (m.get('breakwater_upstream_calls_total')?.metrics ?? []).map((s) => s.labels?.endpoint),
    );
    await supervisor.stop();
    expect([...endpoints].join(' ')).not.toContain('@example.com');
    expect(endpoints.size).toBeLessThanOrEqual(2);
  });

  it('M2: upstream_calls_total equals the emulator count when BYOK keys are injected (their check call is an upstream call)', async () => {
    emulator.reset();
    const supervisor = createSupervisor(byokConfig(), { tracing: false });
    const metrics = createBreakwaterMetrics(supervisor);
    await supervisor.byok.inject('s1', 'openai', 'sk-proj-user0000000000000000000000a1b2');
    const a = supervisor.spawnAgent({ name: 'k', chain: 'main', session: 's1' });
    await a.ask('hello');
    const m = parse(await metrics.registry.metrics());
    await supervisor.stop();
    expect(sum(m.get('breakwater_upstream_calls_total'))).toBe(emulator.stats().totalCalls);
  });

  it('M3: a scrape after supervisor.stop() answers 200 and the gauges say nothing is held', async () => {
    emulator.reset();
    const supervisor = createSupervisor(
      {
        endpoints: [emulatorEndpoint(emulator, 'b', 'openai', 'gpt-4o-mini', PLATFORM)],
        chains: { main: ['b'] },
      },
      { tracing: false },
    );
    const metrics = createBreakwaterMetrics(supervisor);
    const server = await startMetricsServer(metrics.registry);
    await supervisor.spawnAgent({ name: 'x', chain: 'main' }).ask('hi');
    await supervisor.stop();
    const res = await fetch(server.url);
    const text = await res.text();
    await server.close();
    expect(res.status).toBe(200);
    expect(sum(parse(text).get('breakwater_tokens_held'))).toBe(0);
  });

  it('M4: a second supervisor on the same registry is told what to do; after detach() (a restart) it registers', async () => {
    const app = new Registry();
    const mk = () =>
      createSupervisor(
        {
          endpoints: [emulatorEndpoint(emulator, 'b', 'openai', 'gpt-4o-mini', PLATFORM)],
          chains: { main: ['b'] },
        },
        { tracing: false },
      );
    const s1 = mk();
    const s2 = mk();
    try {
      const first = createBreakwaterMetrics(s1, { registry: app });
      expect(() => createBreakwaterMetrics(s2, { registry: app })).toThrow(
        /detach\(\) that one first, or give this one another prefix/,
      );
      // Side by side with a prefix of its own.
      const second = createBreakwaterMetrics(s2, { registry: app, prefix: 'breakwater_b_' });
      expect(await app.metrics()).toContain('breakwater_b_upstream_calls_total');
      second.detach();
      // A restart: the first detaches, a new one takes its names.
      first.detach();
      expect(() => createBreakwaterMetrics(s2, { registry: app })).not.toThrow();
      expect(await app.metrics()).not.toContain('breakwater_b_upstream_calls_total');
    } finally {
      await s1.stop();
      await s2.stop();
    }
  });

  it('M5: the metrics server on a port in use rejects with an error naming the port', async () => {
    const a = await startMetricsServer(new Registry());
    const port = Number(new URL(a.url).port);
    let err: unknown;
    try {
      await startMetricsServer(new Registry(), { port });
    } catch (e) {
      err = e;
    }
    await a.close();
    expect(String(err)).toMatch(new RegExp(`${port}`));
    expect(String(err)).toMatch(/metrics|in use/i);
  });
});
