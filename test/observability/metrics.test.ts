import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
// @ts-expect-error: the parser ships no types; its output shape is checked below.
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createBreakwaterMetrics } from '../../src/observability/prometheus-metrics.ts';
import { startMetricsServer } from '../../src/observability/metrics-server.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import { cleanEnv, finished, spawnCli } from '../cli/run-cli.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

interface Sample {
  labels?: Record<string, string>;
  value?: string;
}
interface Family {
  name: string;
  type: string;
  metrics: Sample[];
}

async function scrape(url: string): Promise<Map<string, Family>> {
  const res = await fetch(url);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain');
  const families = parsePrometheusTextFormat(await res.text()) as Family[];
  return new Map(families.map((f) => [f.name, f]));
}

const sum = (f: Family | undefined, where: (l: Record<string, string>) => boolean = () => true) =>
  (f?.metrics ?? []).filter((m) => where(m.labels ?? {})).reduce((n, m) => n + Number(m.value ?? 0), 0);

let emulator: Emulator;
beforeAll(async () => {
  // The emulator on the real clock: the CLI child's calls take real (short) time.
  emulator = await startEmulator({ profile: { seed: 9, latency: { minMs: 5, maxMs: 20 } } });
});
afterAll(async () => {
  await emulator.close();
});

describe('Prometheus metrics (prom-client), scraped over HTTP and parsed', () => {
  it('counts every upstream call the emulator saw, by endpoint, outcome and fault kind; names follow conventions', async () => {
    emulator.reset();
    emulator.addFault({ kind: 'rate_limit', match: { flavor: 'anthropic' }, retryAfterMs: 60_000 });
    const supervisor = createSupervisor(
      {
        endpoints: [
          emulatorEndpoint(emulator, 'primary', 'anthropic', 'claude-sonnet-4-6'),
          emulatorEndpoint(emulator, 'backup', 'openai', 'gpt-4o-mini'),
        ],
        chains: { premium: ['primary', 'backup'] },
        concurrency: { limit: 3 },
      },
      { tracing: false },
    );
    const metrics = createBreakwaterMetrics(supervisor);
    const server = await startMetricsServer(metrics.registry);
    try {
      const agents = Array.from({ length: 6 }, (_, i) =>
        supervisor.spawnAgent({ name: `agent-${i}`, chain: 'premium', tier: 'analysis' }),
      );
      await Promise.all(agents.map((a) => a.ask(`item for ${a.name}`)));
      const m = await scrape(server.url);
      const stats = emulator.stats();
      expect(sum(m.get('breakwater_upstream_calls_total'))).toBe(stats.totalCalls);
      expect(sum(m.get('breakwater_upstream_calls_total'), (l) => l.endpoint === 'primary')).toBe(
        stats.byFlavor.anthropic ?? 0,
      );
      expect(sum(m.get('breakwater_rate_limited_total'))).toBe(stats.byFlavor.anthropic ?? 0);
      expect(
        sum(m.get('breakwater_upstream_calls_total'), (l) => l.fault_kind === 'rate_limited'),
      ).toBeGreaterThan(0);
      expect(sum(m.get('breakwater_turns_total'), (l) => l.outcome === 'fallback')).toBe(6);
      expect(m.get('breakwater_tokens_limit')?.metrics[0]?.value).toBe('3');
      // The primary cools for the Retry-After: the gauge says how long is left.
      const cooldown = m.get('breakwater_endpoint_cooldown_remaining_seconds')!;
      const primary = cooldown.metrics.find((s) => s.labels?.endpoint === 'primary');
      expect(Number(primary?.value)).toBeGreaterThan(0);
      expect(m.get('breakwater_upstream_calls_total')?.type).toBe('COUNTER');
      expect(m.get('breakwater_token_wait_seconds')?.type).toBe('HISTOGRAM');
      // Bounded labels: no agent name, prompt or key anywhere in the exposition.
      const text = await (await fetch(server.url)).text();
      expect(text).not.toContain('agent-0');
      expect(text).not.toContain('item for');
      expect(text).not.toContain('sk-test-');
      expect((await fetch(server.url.replace('/metrics', '/'))).status).toBe(404);
    } finally {
      await server.close();
      metrics.detach();
      await supervisor.stop();
      emulator.clearFaults();
    }
  });
});

describe('breakwater run --metrics-port', () => {
  let dir: string;
  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'bw-metrics-'));
    writeFileSync(
      join(dir, 'scenario.yaml'),
      `
name: metrics-drill
timeScale: 1
runtime:
  endpoints:
    - { id: primary, provider: openai, model: gpt-4o, emulator: openai, apiKey: sk-metrics-drill-0000000001 }
    - { id: backup, provider: anthropic, model: claude-sonnet-4-6, emulator: anthropic, apiKey: sk-ant-metrics-drill-00001 }
  chains: { main: [primary, backup] }
  concurrency: { limit: 2 }
agents:
${Array.from({ length: 5 }, (_, i) => `  - { name: A${i}, chain: main }`).join('\n')}
rounds:
  count: 2
  items:
${Array.from({ length: 6 }, (_, i) => `    - { id: I${i + 1}, title: Item ${i + 1} }`).join('\n')}
emulator:
  seed: 5
  latency: { minMs: 60, maxMs: 120 }
`,
    );
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('serves /metrics while the run goes: tokens held never above the limit, calls never above what the emulator saw', async () => {
    emulator.reset();
    const child = spawnCli(
      [
        'run',
        join(dir, 'scenario.yaml'),
        '--metrics-port',
        '0',
        '--no-live',
        '--no-stdin',
        '--emulator-url',
        emulator.controlURL,
        '--data-dir',
        join(dir, 'data'),
      ],
      cleanEnv({ DATABASE_URL: '' }),
    );
    const run = finished(child);
    const url = await new Promise<string>((resolve, reject) => {
      let out = '';
      const timer = setTimeout(() => reject(new Error(`no metrics URL printed: ${out}`)), 60_000);
      child.stdout?.on('data', (d: Buffer | string) => {
        out += d.toString();
        const m = /metrics: (http:\/\/127\.0\.0\.1:\d+\/metrics)/.exec(out);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
    });
    let ended = false;
    void run.then(() => {
      ended = true;
    });
    let scrapes = 0;
    let maxHeld = 0;
    let lastCalls = 0;
    // Bounded: at most 400 scrapes, 20 ms apart; the run ends long before (5 agents × 12 turns on 2 tokens).
    for (let i = 0; i < 400 && !ended; i++) {
      let m: Map<string, Family>;
      try {
        m = await scrape(url);
      } catch (e) {
        // The server closes with the run: a scrape cut by that is the end, anything else a failure.
        const gone = await Promise.race([
          run.then(() => true),
          new Promise<boolean>((r) => setTimeout(() => r(false), 30_000)),
        ]);
        if (gone) break;
        throw e;
      }
      scrapes++;
      const held = sum(m.get('breakwater_tokens_held'));
      maxHeld = Math.max(maxHeld, held);
      expect(held).toBeLessThanOrEqual(Number(m.get('breakwater_tokens_limit')?.metrics[0]?.value));
      const calls = sum(m.get('breakwater_upstream_calls_total'));
      // A call is counted when it ends; the emulator counts it when it arrives: ours can never be ahead.
      expect(calls).toBeLessThanOrEqual(emulator.stats().totalCalls);
      expect(calls).toBeGreaterThanOrEqual(lastCalls);
      lastCalls = calls;
      await new Promise((r) => setTimeout(r, 20));
    }
    const result = await run;
    expect(result.code).toBe(0);
    expect(scrapes).toBeGreaterThan(3);
    expect(lastCalls).toBeGreaterThan(0);
    expect(maxHeld).toBeGreaterThan(0);
  }, 180_000);

  it('a --metrics-port in use stops the command in one line before any run is stored', async () => {
    const taken = createServer();
    await new Promise<void>((r) => taken.listen(0, '127.0.0.1', r));
    const port = (taken.address() as AddressInfo).port;
    try {
      const data = join(dir, 'data-taken');
      const run = await finished(
        spawnCli(
          [
            'run',
            join(dir, 'scenario.yaml'),
            '--metrics-port',
            String(port),
            '--no-live',
            '--no-stdin',
            '--data-dir',
            data,
          ],
          cleanEnv({ DATABASE_URL: '' }),
        ),
      );
      expect(run.code).not.toBe(0);
      expect(run.stderr.trimEnd().split('\n')).toEqual([
        `breakwater run: --metrics-port ${port}: the port is in use on 127.0.0.1; give another, or 0 for any free port`,
      ]);
      const runs = await finished(
        spawnCli(['runs', '--json', '--data-dir', data], cleanEnv({ DATABASE_URL: '' })),
      );
      expect(runs.code, runs.stderr).toBe(0);
      expect(JSON.parse(runs.stdout)).toEqual([]);
    } finally {
      await new Promise<void>((r) => taken.close(() => r()));
    }
  }, 120_000);
});
