import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator/emulator-server.ts';
import { DeadlineError } from '../../src/engines/timed-fetch.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import { createLogger } from '../../src/logging/logger.ts';
import { type ProviderMode, runScenario } from '../../src/runs/run-scenario.ts';
import { parseScenario } from '../../src/scenarios/load-scenario.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import {
  type FormProvider,
  okReply,
  RESET_HEADER_FORMS,
  type ResetHeaderForm,
  rateLimitReply,
} from '../support/reset-header-forms.ts';
import { startWireFixtureServer, type WireFixtureServer } from '../support/wire-fixture-server.ts';
import { LIMITED_THEN_BACKUP } from '../support/limited-backup-scenario.ts';

/*
 * Issue 18, "Done when" 1: a scenario whose `start:` is in the past (agent8-storm's 2026-03-02) points
 * its endpoints at a raw "real" server that answers the first call with a 429 carrying a reset in each
 * header form, stamped on the real wall clock as the request arrives. The cooldown the runtime applies
 * equals the header's (± 1 s) — not 274 days — and an absurd header gives the capped 15 min. The agent
 * falls back to a second endpoint, so every run completes at once.
 */

const START = '2026-03-02T09:00:00+09:00';
const WAIT_MS = 7_000;
const TOLERANCE_MS = 1_000;
const KEYS: Record<FormProvider, string> = {
  anthropic: 'sk-ant-wallclock-test-0000000001',
  openai: 'sk-wallclock-test-00000000000001',
};
const MODEL: Record<FormProvider, string> = { anthropic: 'claude-sonnet-4-6', openai: 'gpt-4o' };

let server: WireFixtureServer;
let database: BreakwaterDatabase;

beforeAll(async () => {
  server = await startWireFixtureServer({
    'ok-anthropic': okReply('anthropic'),
    'ok-openai': okReply('openai'),
  });
  database = await openDatabase({ dataDir: ':memory:' });
});
afterAll(async () => {
  await database.close();
  await server.close();
});

/** One agent, one item; `limited` answers 429, `backup` answers. */
function scenario(
  name: string,
  provider: FormProvider,
  limitedRoute: string,
  timeScale = 1,
  extra = '',
): string {
  const endpoint = (id: string, route: string) =>
    `    - { id: ${id}, provider: ${provider}, model: ${MODEL[provider]}, apiKey: ${KEYS[provider]}, baseURL: "${server.url(route)}" }`;
  return `
name: ${name}
start: ${START}
timeScale: ${timeScale}
runtime:
  endpoints:
${endpoint('limited', limitedRoute)}
${endpoint('backup', `ok-${provider}`)}
${LIMITED_THEN_BACKUP}${extra}`;
}

/** One agent, one item, on emulator endpoints: `limited` of one provider, `backup` of another. */
function emulatedScenario(
  name: string,
  timeScale: number,
  limited: FormProvider,
  backup: FormProvider,
  start = '',
): string {
  return `
name: ${name}
${start}
timeScale: ${timeScale}
runtime:
  endpoints:
    - { id: limited, provider: ${limited}, model: ${MODEL[limited]}, emulator: ${limited}, apiKey: emu-a }
    - { id: backup, provider: ${backup}, model: ${MODEL[backup]}, emulator: ${backup}, apiKey: emu-b }
${LIMITED_THEN_BACKUP}emulator:
  acceptAnyKey: true
`;
}

interface Observed {
  readonly startedAt: number;
  readonly fault: Extract<RuntimeEvent, { type: 'call.attempt' }>;
  /** The cooldown the endpoint's health recorded, from the fault's instant (run clock). */
  readonly cooldownMs: number | undefined;
  readonly status: string;
}

async function run(
  text: string,
  options: {
    providers?: ProviderMode;
    env?: Record<string, string>;
    logs?: string[];
    emulatorUrl?: string;
  } = {},
) {
  const events: RuntimeEvent[] = [];
  const spec = parseScenario(text, 'inline');
  const runId = `${spec.name}-${Date.now()}`;
  const result = await runScenario({
    scenario: spec,
    database,
    runId,
    onEvent: (e) => events.push(e),
    ...(options.providers ? { providers: options.providers } : {}),
    ...(options.env ? { env: options.env } : {}),
    ...(options.emulatorUrl ? { emulatorUrl: options.emulatorUrl } : {}),
    ...(options.logs
      ? {
          logger: createLogger({
            level: 'warn',
            destination: { write: (l: string) => options.logs!.push(l) },
          }),
        }
      : {}),
  });
  const fault = events.find(
    (e): e is Observed['fault'] => e.type === 'call.attempt' && e.data.outcome === 'fault',
  );
  if (!fault) throw new Error(`no faulted call in ${events.map((e) => e.type).join(', ')}`);
  const rounds = await createRunStore(database).listRounds(runId);
  // The endpoints' health is committed with the round (breakwater's executor: `{ endpoints, tokens }`).
  const summary = rounds[0]?.summary as { health?: { endpoints?: { id: string; cooldownUntil: number }[] } };
  const limited = summary?.health?.endpoints?.find((h) => h.id === fault.endpoint);
  return {
    startedAt: events.find((e) => e.type === 'run.started')?.at ?? Number.NaN,
    fault,
    cooldownMs: limited ? limited.cooldownUntil - fault.at : undefined,
    status: result.run.status,
  } satisfies Observed;
}

function expectAbout(ms: number | undefined, want: number, tolerance = TOLERANCE_MS): void {
  expect(ms).toBeGreaterThanOrEqual(want - tolerance);
  expect(ms).toBeLessThanOrEqual(want + tolerance);
}

describe('a scenario starting in the past, against a server sending each reset-header form', () => {
  for (const form of RESET_HEADER_FORMS) {
    it(`${form.name}: the endpoint cools down for the header's 7 s (± 1 s), on the scenario's clock`, async () => {
      const route = `scenario-${form.name}`;
      server.route(route, () => rateLimitReply(form, Date.now(), WAIT_MS));
      const seen = await run(scenario(`wall-${form.name}`, form.provider, route));
      expect(seen.status).toBe('completed');
      // The run's clock is the scenario's (its first event at the past start), months behind the wall clock.
      expect(seen.startedAt - Date.parse(START)).toBeGreaterThanOrEqual(0);
      expect(seen.startedAt - Date.parse(START)).toBeLessThan(60_000);
      expect(seen.fault.endpoint).toBe('limited');
      expect(seen.fault.data.faultKind).toBe('rate_limited');
      expectAbout(seen.fault.data.retryAfterMs, WAIT_MS);
      expectAbout(seen.cooldownMs, WAIT_MS);
    });
  }

  // A real server lives in wall time: on a run replayed at timeScale 15 its 7 s are 105 s of the run's clock (else
  // the endpoint is called again 15 times too early). ± 1 s of real time is ± 15 s here.
  for (const name of ['retry-after-seconds', 'anthropic-ratelimit-reset', 'openai-ratelimit-reset']) {
    it(`${name} at timeScale 15: the cooldown is the header's 7 real seconds, 105 s of the run's clock`, async () => {
      const form = RESET_HEADER_FORMS.find((f) => f.name === name) as ResetHeaderForm;
      const route = `scaled-${name}`;
      server.route(route, () => rateLimitReply(form, Date.now(), WAIT_MS));
      const seen = await run(scenario(`scaled-${name}`, form.provider, route, 15));
      expect(seen.status).toBe('completed');
      expect(seen.fault.endpoint).toBe('limited');
      expectAbout(seen.fault.data.retryAfterMs, WAIT_MS * 15, TOLERANCE_MS * 15);
      expectAbout(seen.cooldownMs, WAIT_MS * 15, TOLERANCE_MS * 15);
    });
  }

  // The cap is on the run's clock: 14 real minutes at timeScale 15 are 210 min there, past the 15 min cap.
  it('a 14 min retry-after at timeScale 15 is capped at 15 min of the run clock, and said once', async () => {
    const form = RESET_HEADER_FORMS.find((f) => f.name === 'retry-after-seconds') as ResetHeaderForm;
    server.route('scaled-long', () => rateLimitReply(form, Date.now(), 14 * 60_000));
    const logs: string[] = [];
    const seen = await run(scenario('scaled-long', form.provider, 'scaled-long', 15), { logs });
    expect(seen.status).toBe('completed');
    expect(seen.fault.data.retryAfterMs).toBe(15 * 60_000);
    expectAbout(seen.fault.data.retryAfterCappedFromMs, 14 * 60_000 * 15, TOLERANCE_MS * 15);
    expectAbout(seen.cooldownMs, 15 * 60_000, TOLERANCE_MS * 15);
    const warnings = logs.map((l) => JSON.parse(l)).filter((l) => /maxRetryAfterMs/.test(l.msg));
    expect(warnings).toHaveLength(1);
  });

  // A `faults:` rule's wait is simulated time like the rest of the scenario: the proxy in front of the real server
  // writes it in real ms (2000 / 15) and the engine scales it back, so it is not scaled twice (30 s).
  it('a faults: rate_limit with retryAfterMs 2000 at timeScale 15 cools the endpoint for 2 s of the run clock', async () => {
    const faults = `faults:
  - { endpoint: limited, kind: rate_limit, retryAfterMs: 2000, count: 1 }
`;
    const seen = await run(scenario('proxy-scaled', 'openai', 'ok-openai', 15, faults));
    expect(seen.status).toBe('completed');
    expect(seen.fault.endpoint).toBe('limited');
    expect(seen.fault.data.faultKind).toBe('rate_limited');
    // retry-after-ms is written in whole real ms (134 for 133.3), so 2010 on the run's clock.
    expectAbout(seen.fault.data.retryAfterMs, 2_000, 30);
    // The cooldown counts from the release, some real ms (each 15 here) after the fault's instant: one-sided, with
    // room for a loaded machine (up to ~0.8 real s). Scaled twice it would be 30 s; not scaled back, 134 ms.
    expect(seen.cooldownMs).toBeGreaterThanOrEqual(1_990);
    expect(seen.cooldownMs).toBeLessThanOrEqual(15_000);
  });

  it('an absurd reset (a year ahead) cools the endpoint for the 15 min cap, not a year', async () => {
    const form = RESET_HEADER_FORMS.find((f) => f.name === 'anthropic-ratelimit-reset') as ResetHeaderForm;
    server.route('scenario-absurd', () => rateLimitReply(form, Date.now(), 365 * 86_400_000));
    const logs: string[] = [];
    const seen = await run(scenario('wall-absurd', 'anthropic', 'scenario-absurd'), { logs });
    expect(seen.status).toBe('completed');
    expect(seen.fault.data.retryAfterMs).toBe(15 * 60_000);
    expectAbout(seen.cooldownMs, 15 * 60_000);
    // What was asked is kept and said: on the event, and in one warning naming the option.
    expectAbout(seen.fault.data.retryAfterCappedFromMs, 365 * 86_400_000);
    const warnings = logs.map((l) => JSON.parse(l)).filter((l) => /maxRetryAfterMs/.test(l.msg));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ level: 40, endpoint: 'limited', agent: 'Kai' });
  });
});

describe('--providers real', () => {
  it('runs on wall time from now, and reads the reset instants right', async () => {
    const form = RESET_HEADER_FORMS.find((f) => f.name === 'anthropic-ratelimit-reset') as ResetHeaderForm;
    server.route('real-limited', () => rateLimitReply(form, Date.now(), WAIT_MS));
    // The same scenario with emulator endpoints; --providers real points them at the "real" server.
    const text = emulatedScenario('wall-real', 20, 'anthropic', 'openai', `start: ${START}`);
    const saved = { a: process.env.ANTHROPIC_API_KEY, o: process.env.OPENAI_API_KEY };
    // The engines read their keys from the environment, as with real providers.
    process.env.ANTHROPIC_API_KEY = KEYS.anthropic;
    process.env.OPENAI_API_KEY = KEYS.openai;
    try {
      const before = Date.now();
      const seen = await run(text, {
        providers: 'real',
        env: {
          ANTHROPIC_API_KEY: KEYS.anthropic,
          OPENAI_API_KEY: KEYS.openai,
          ANTHROPIC_BASE_URL: server.url('real-limited'),
          OPENAI_BASE_URL: server.url('ok-openai'),
        },
      });
      expect(seen.status).toBe('completed');
      // Wall time from now, not the scenario's 2026-03-02 (and not 20× faster).
      expect(seen.startedAt).toBeGreaterThanOrEqual(before);
      expect(seen.startedAt).toBeLessThanOrEqual(Date.now());
      expect(seen.fault.data.faultKind).toBe('rate_limited');
      expectAbout(seen.fault.data.retryAfterMs, WAIT_MS);
      expectAbout(seen.cooldownMs, WAIT_MS);
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
});

describe('an emulator given by URL (--emulator-url)', () => {
  it("runs on its own wall clock: at timeScale 15 its 7 s retry-after is 105 s of the run's clock", async () => {
    const external = await startEmulator({
      profile: { seed: 3, faults: [{ kind: 'rate_limit', retryAfterMs: WAIT_MS, count: 1 }] },
    });
    try {
      const text = emulatedScenario('external-emulator', 15, 'openai', 'anthropic');
      const seen = await run(text, { emulatorUrl: external.controlURL });
      expect(seen.status).toBe('completed');
      expect(seen.fault.endpoint).toBe('limited');
      expect(seen.fault.data.faultKind).toBe('rate_limited');
      // retry-after-ms 7000 real ms, × 15.
      expect(seen.fault.data.retryAfterMs).toBe(WAIT_MS * 15);
    } finally {
      await external.close();
    }
  });
});

describe('call deadlines and the token lease of a wall-time endpoint', () => {
  /** A server answering after 1 real second, and a run at timeScale 15 against it. */
  async function slowRun(endpointExtra: string, concurrency = '{ limit: 1 }') {
    const slow = createServer((req, res) => {
      req.resume();
      const timer = setTimeout(() => {
        const reply = okReply('openai');
        res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
        res.end(JSON.stringify(reply.body));
      }, 1_000);
      res.on('close', () => clearTimeout(timer));
    });
    await new Promise<void>((resolve) => slow.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/v1`;
      const text = `
name: slow-real
timeScale: 15
runtime:
  endpoints:
    - { id: slow, provider: openai, model: gpt-4o, apiKey: ${KEYS.openai}, baseURL: "${url}"${endpointExtra} }
  chains: { main: [slow] }
  concurrency: ${concurrency}
agents:
  - { name: Kai, chain: main, role: "You are Kai." }
rounds:
  count: 1
  items: [{ id: I1, title: Status of the payment API }]
`;
      const events: RuntimeEvent[] = [];
      const runId = `slow-real-${Date.now()}`;
      const result = await runScenario({
        scenario: parseScenario(text, 'inline'),
        database,
        runId,
        onEvent: (e) => events.push(e),
      });
      const calls = events.filter(
        (e): e is Extract<RuntimeEvent, { type: 'call.attempt' }> => e.type === 'call.attempt',
      );
      // The committed turns, with their faults' messages.
      const turns = JSON.stringify(await createRunStore(database).listTurns(runId));
      return { status: result.run.status, calls, turns };
    } finally {
      slow.closeAllConnections();
      await new Promise((resolve) => slow.close(resolve));
    }
  }

  it("headersTimeoutMs is the endpoint's own time: 5000 at timeScale 15 waits 5 real seconds, not 0.33", async () => {
    const seen = await slowRun(', headersTimeoutMs: 5000');
    expect(seen.status).toBe('completed');
    expect(seen.calls.map((c) => c.data.outcome)).toEqual(['ok']);
  }, 30_000);

  it('a deadline missed is a timeout, and its error says both times (500 ms of the endpoint, 7500 of the run)', async () => {
    const seen = await slowRun(', headersTimeoutMs: 500');
    expect(seen.calls[0]?.data.outcome).toBe('fault');
    expect(seen.calls[0]?.data.faultKind).toBe('timeout');
    // The SDK reports its own "Request timed out."; the adapter's error (in logs and causes) names both times.
    expect(new DeadlineError('headers', 7_500, 15).message).toBe(
      "no response headers within 500 ms of the endpoint's time (7500 ms of the run's clock) (timed out)",
    );
    expect(new DeadlineError('idle', 30_000).message).toBe('response body idle for 30000 ms (timed out)');
  }, 60_000);

  it("the token lease is the endpoint's time too: leaseMs 10000 at timeScale 15 does not cut a 1 s call", async () => {
    // On the run's clock alone the lease would take the token back after 0.67 real s, cancelling the call.
    const seen = await slowRun(', headersTimeoutMs: 5000', '{ limit: 1, leaseMs: 10000 }');
    expect(seen.status).toBe('completed');
    expect(seen.calls.map((c) => c.data.outcome)).toEqual(['ok']);
  }, 30_000);
});
