import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isConfigError } from '../../src/core/errors/config-error.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import { runScenario } from '../../src/runs/run-scenario.ts';
import { parseScenario } from '../../src/scenarios/load-scenario.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { okReply } from '../support/reset-header-forms.ts';
import { startWireFixtureServer, type WireFixtureServer } from '../support/wire-fixture-server.ts';

/*
 * A scenario's top-level `faults:` name endpoints by id. A real endpoint (here a raw server standing in
 * for the provider) gets a local fault proxy: its first calls fail as the rules say, the agents fall
 * back, and once the rules are spent the real server answers again — a recovering real endpoint,
 * rehearsed. The same rules survive `--providers real`.
 */

const ANT_KEY = 'sk-ant-scenario-faults-000000001';
const OA_KEY = 'sk-scenario-faults-0000000000001';

let real: WireFixtureServer;
let database: BreakwaterDatabase;

beforeAll(async () => {
  real = await startWireFixtureServer({
    anthropic: okReply('anthropic', 'the real primary'),
    'anthropic-real-mode': okReply('anthropic', 'the real primary'),
    openai: okReply('openai', 'the real backup'),
  });
  database = await openDatabase({ dataDir: ':memory:' });
});
afterAll(async () => {
  await database.close();
  await real.close();
});

const body = (endpoints: string, faults: string, extra = '') => `
name: proxy-drill
start: 2026-03-02T09:00:00+09:00
runtime:
  endpoints:
${endpoints}
  chains: { main: [primary], spare: [backup] }
  concurrency: { limit: 1 }
  breaker: { consecutiveToOpen: 100, failureRateThreshold: 0.99, minCallsInWindow: 100 }
agents:
  - { name: Kai, chain: main, role: "You are Kai." }
rounds:
  count: 1
  items: [{ id: I1, title: One }, { id: I2, title: Two }, { id: I3, title: Three }, { id: I4, title: Four }]
${faults}
${extra}`;

async function run(text: string, options: Partial<Parameters<typeof runScenario>[0]> = {}) {
  const events: RuntimeEvent[] = [];
  const result = await runScenario({
    scenario: parseScenario(text, 'inline'),
    database,
    runId: `proxy-drill-${Date.now()}-${Math.random().toString(16).slice(2, 6)}`,
    onEvent: (e) => events.push(e),
    virtualTime: options.providers !== 'real',
    ...options,
  });
  const attempts = events.filter(
    (e): e is Extract<RuntimeEvent, { type: 'call.attempt' }> => e.type === 'call.attempt',
  );
  return { result, attempts };
}

describe('faults: aimed at a real endpoint by id', () => {
  it('its first two calls are overloaded (in its own wire format), the agent waits them out, then the real server answers', async () => {
    const text = body(
      `    - { id: primary, provider: anthropic, model: claude-sonnet-4-6, apiKey: ${ANT_KEY}, baseURL: "${real.url('anthropic')}" }
    - { id: backup, provider: openai, model: gpt-4o, apiKey: ${OA_KEY}, baseURL: "${real.url('openai')}" }`,
      `faults:
  - { endpoint: primary, kind: overloaded, count: 2 }`,
    );
    const { result, attempts } = await run(text);
    expect(result.run.status).toBe('completed');
    const primary = attempts.filter((a) => a.endpoint === 'primary');
    expect(primary.slice(0, 2).map((a) => [a.data.faultKind, a.data.status])).toEqual([
      ['overloaded', 529],
      ['overloaded', 529],
    ]);
    // The real server saw only the calls the rules let through: every primary call after the first two.
    const through = primary.filter((a) => a.data.outcome === 'ok').length;
    expect(through).toBeGreaterThan(0);
    expect(real.requests('anthropic')).toHaveLength(through);
    expect(primary).toHaveLength(through + 2);
  });

  it('--providers real keeps the rules: the proxy sits in front of the base URL from the environment', async () => {
    const text = body(
      `    - { id: primary, provider: anthropic, model: claude-sonnet-4-6, emulator: anthropic, apiKey: emu-a }
    - { id: backup, provider: openai, model: gpt-4o, emulator: openai, apiKey: emu-b }`,
      `faults:
  - { endpoint: primary, kind: rate_limit, retryAfterMs: 300, count: 1 }`,
      'emulator:\n  acceptAnyKey: true',
    );
    const saved = { a: process.env.ANTHROPIC_API_KEY, o: process.env.OPENAI_API_KEY };
    process.env.ANTHROPIC_API_KEY = ANT_KEY;
    process.env.OPENAI_API_KEY = OA_KEY;
    try {
      const { result, attempts } = await run(text, {
        providers: 'real',
        env: {
          ANTHROPIC_API_KEY: ANT_KEY,
          OPENAI_API_KEY: OA_KEY,
          ANTHROPIC_BASE_URL: real.url('anthropic-real-mode'),
          OPENAI_BASE_URL: real.url('openai'),
        },
      });
      expect(result.run.status).toBe('completed');
      const first = attempts.find((a) => a.endpoint === 'primary');
      // A real run waits in wall time: the rule asks for 300 ms only.
      expect(first?.data).toMatchObject({
        outcome: 'fault',
        faultKind: 'rate_limited',
        status: 429,
        retryAfterMs: 300,
      });
      const through = attempts.filter((a) => a.endpoint === 'primary' && a.data.outcome === 'ok').length;
      expect(real.requests('anthropic-real-mode')).toHaveLength(through);
    } finally {
      for (const [name, value] of [
        ['ANTHROPIC_API_KEY', saved.a],
        ['OPENAI_API_KEY', saved.o],
      ] as const) {
        if (value === undefined) delete process.env[name];
        else process.env[name] = value;
      }
    }
  });

  it('a rule naming no endpoint, or one the proxy cannot act out, is refused with its line and field', () => {
    const endpoints = `    - { id: primary, provider: anthropic, model: m, apiKey: ${ANT_KEY}, baseURL: "http://127.0.0.1:9/" }
    - { id: backup, provider: openai, model: m, apiKey: ${OA_KEY}, baseURL: "http://127.0.0.1:9/v1" }`;
    const refusal = (faults: string) => {
      try {
        parseScenario(body(endpoints, faults), 'drill.yaml');
      } catch (e) {
        if (isConfigError(e)) return e;
        throw e;
      }
      throw new Error('accepted');
    };
    const unknown = refusal('faults:\n  - { endpoint: primry, kind: overloaded }');
    expect(unknown.path).toBe('faults[0].endpoint');
    expect(unknown.message).toMatch(
      /names endpoint "primry", which is not defined under runtime\.endpoints \(defined: primary, backup\)/,
    );
    expect(unknown.line).toBeGreaterThan(0);
    const refused = refusal('faults:\n  - { endpoint: primary, kind: connection_refused }');
    expect(refused.path).toBe('faults[0].kind');
    expect(refused.message).toMatch(
      /connection_refused cannot be acted out by the fault proxy.*use connection_reset/,
    );
  });
});
