import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import {
  ALL_COOLING_MESSAGE,
  createStatusQuoExecutor,
  type StatusQuoOptions,
} from '../../src/runs/policies/status-quo-worker.ts';
import type { TurnExecutor } from '../../src/runs/turn-executor.ts';
import type { Turn } from '../../src/core/turn.ts';
import { parseScenario } from '../../src/scenarios/load-scenario.ts';
import { driveUntil, ioTurn, settle } from '../support/runtime-harness.ts';

/** Seed 000's cast, on the old worker's two models plus a light one the old worker never uses. */
const SPEC = parseScenario(
  `name: status-quo-test
runtime:
  endpoints:
    - { id: codex, provider: openai, model: gpt-5.5, emulator: openai, apiKey: sk-emu-codex-000000000001 }
    - { id: sonnet, provider: anthropic, model: claude-sonnet-4-6, emulator: anthropic, apiKey: sk-ant-emu-desk-000000002 }
    - { id: mini, provider: openai, model: gpt-4o-mini, emulator: openai, apiKey: sk-emu-light-000000000003 }
  chains:
    premium: [codex, sonnet]
    light: [mini, codex]
agents:
  - { name: codex, tier: ops, chain: light }
  - { name: orchestrator, tier: ops, chain: light }
  - { name: analyst-fundamental, tier: analysis, chain: premium }
  - { name: analyst-macro, tier: analysis, chain: premium, role: You are the macro analyst. }
  - { name: analyst-technical, tier: analysis, chain: premium }
  - { name: cowork, tier: analysis, chain: premium }
  - { name: telegram-outbox-flusher, tier: ops, noAgent: true }
rounds: { count: 1, items: [{ id: x, title: x }] }
emulator: {}
`,
  'status-quo-test',
);

let emulator: Emulator;
let clock: ManualClock;
let executor: TurnExecutor | undefined;
let events: RuntimeEvent[];

beforeAll(async () => {
  clock = createManualClock(Date.parse('2026-08-17T07:30:00+09:00'));
  emulator = await startEmulator({ profile: { seed: 5 }, clock });
});
afterEach(async () => {
  await executor?.stop();
  executor = undefined;
  emulator.clearFaults();
  emulator.reset();
});
afterAll(async () => {
  await emulator.close();
});

function start(options: Partial<StatusQuoOptions> = {}): TurnExecutor {
  events = [];
  executor = createStatusQuoExecutor(SPEC, { clock, baseURL: (f) => emulator.baseURL(f), ...options });
  executor.subscribeEvents((e) => events.push(e));
  return executor;
}

let seq = 0;
function ask(agent: string): { turn: Turn | undefined; done: Promise<Turn> } {
  const key = `run:1:job-${++seq}:${agent}`;
  const box: { turn: Turn | undefined; done: Promise<Turn> } = {
    turn: undefined,
    done: Promise.resolve() as never,
  };
  box.done = executor!.ask({
    agent,
    prompt: `job ${seq}`,
    key,
    turnId: key,
    meta: { round: 1, itemId: `job-${seq}` },
  });
  void box.done.then((t) => {
    box.turn = t;
  });
  return box;
}

const attempts = (agent?: string) =>
  events.filter(
    (e): e is Extract<RuntimeEvent, { type: 'call.attempt' }> =>
      e.type === 'call.attempt' && (agent === undefined || e.agent === agent),
  );
const sleeping = (agent: string) => {
  const states = events.filter((e) => e.type === 'agent.state' && e.agent === agent);
  return (states.at(-1) as { data: { state: string } } | undefined)?.data.state === 'cooling';
};

/**
 * Lets every call in flight finish on real I/O, then jumps the clock straight to the next timer (a
 * blocking sleep): the attempt times come out exact, however slow the machine is.
 */
async function driveSleeps(done: () => boolean, maxTimers = 50): Promise<void> {
  for (let i = 0; i < maxTimers; i++) {
    await settle(() => done() || !events.some((e) => e.type === 'agent.state') || quiet());
    await ioTurn();
    if (done()) return;
    if (!quiet()) continue;
    if (!clock.runNext()) await ioTurn();
  }
  throw new Error('driveSleeps: not done');
}
function quiet(): boolean {
  const last = new Map<string, string>();
  for (const e of events) if (e.type === 'agent.state') last.set(e.agent, e.data.state);
  return [...last.values()].every((s) => s !== 'calling');
}

describe('the status-quo worker (seed 000 as it was)', () => {
  it('one agent’s 429 on sonnet takes sonnet out of EVERY agent’s chain (cooldown keyed by model name)', async () => {
    start();
    emulator.addFault({ kind: 'server_error_empty', match: { model: 'gpt-5.5' }, count: 1 });
    emulator.addFault({
      kind: 'rate_limit',
      match: { model: 'claude-sonnet-4-6' },
      count: 1,
      retryAfterMs: 1_000,
    });
    const t0 = clock.now();
    const a = ask('analyst-macro');
    await settle(() => sleeping('analyst-macro'));
    // analyst-macro met gpt-5.5's 500, then sonnet's 429: sonnet is cooling for the whole worker.
    expect(attempts('analyst-macro').map((e) => [e.endpoint, e.data.status])).toEqual([
      ['codex', 500],
      ['sonnet', 429],
    ]);
    expect((executor!.health() as { cooldowns: Record<string, number> }).cooldowns).toEqual({
      'claude-sonnet-4-6': t0 + 60_000,
    });

    // Two other agents now get a 500 from gpt-5.5: neither even tries sonnet, although sonnet is fine now.
    emulator.addFault({ kind: 'server_error_empty', match: { model: 'gpt-5.5' }, count: 2 });
    const b = ask('cowork');
    const c = ask('codex');
    await settle(() => sleeping('cowork') && sleeping('codex'));
    for (const agent of ['cowork', 'codex']) {
      expect(attempts(agent).map((e) => [e.endpoint, e.data.status])).toEqual([['codex', 500]]);
    }
    expect(emulator.stats().byFlavor.anthropic).toBe(1);

    // After the 30 s sleep sonnet is still cooling (60 s): all three finish on gpt-5.5 alone.
    await driveSleeps(() => a.turn !== undefined && b.turn !== undefined && c.turn !== undefined);
    for (const t of [a.turn!, b.turn!, c.turn!]) {
      expect(t.outcome).toBe('answered');
      expect(t.endpointId).toBe('codex');
      expect(t.finishedAt - t.startedAt).toBeGreaterThanOrEqual(30_000);
    }
    expect(emulator.stats().byFlavor.anthropic).toBe(1);

    // Once the minute is over, sonnet is back in every chain: a gpt-5.5 failure falls through to it.
    clock.advance(t0 + 60_000 - clock.now());
    emulator.addFault({ kind: 'server_error_empty', match: { model: 'gpt-5.5' }, count: 1 });
    const d = await ask('analyst-technical').done;
    expect([d.outcome, d.endpointId, d.model]).toEqual(['fallback', 'sonnet', 'claude-sonnet-4-6']);
  });

  it('an empty eligible chain fails the task at once with "all candidate models are cooling down"', async () => {
    start();
    emulator.addFault({ kind: 'rate_limit', match: { model: 'gpt-5.5' }, count: 1, retryAfterMs: 1_000 });
    emulator.addFault({
      kind: 'rate_limit',
      match: { model: 'claude-sonnet-4-6' },
      count: 1,
      retryAfterMs: 1_000,
    });
    const first = ask('analyst-fundamental');
    await settle(() => sleeping('analyst-fundamental'));
    const callsBefore = emulator.stats().totalCalls;

    const started = clock.now();
    const next = await ask('analyst-technical').done;
    expect(next.outcome).toBe('failed');
    expect(next.error).toBe(ALL_COOLING_MESSAGE);
    expect(next.attempts).toBe(0);
    expect(next.startedAt).toBe(started);
    expect(next.finishedAt).toBe(started);
    expect(emulator.stats().totalCalls).toBe(callsBefore);

    // The first task wakes from its 30 s sleep into the same empty chain (both cool for 60 s).
    await driveSleeps(() => first.turn !== undefined);
    expect(first.turn!.outcome).toBe('failed');
    expect(first.turn!.error).toBe(ALL_COOLING_MESSAGE);
    expect(first.turn!.faults.map((f) => f.kind)).toEqual(['rate_limited', 'rate_limited']);
    expect(first.turn!.finishedAt - first.turn!.startedAt).toBe(30_000);

    const logs = events.filter((e) => e.type === 'policy.log');
    expect(logs.map((e) => [e.agent, (e.data as { message: string }).message])).toEqual([
      ['analyst-technical', 'all candidate models are cooling down'],
      ['analyst-fundamental', 'all candidate models are cooling down'],
    ]);
    const completed = events.filter((e) => e.type === 'turn.completed');
    expect(completed.map((e) => [e.agent, (e.data as { outcome: string }).outcome])).toEqual([
      ['analyst-technical', 'failed'],
      ['analyst-fundamental', 'failed'],
    ]);
    expect(completed[0]!.data).toMatchObject({ tier: 'analysis', round: 1, degraded: false, attempts: 0 });
  });

  it('retries block the worker thread 30 s, 60 s, 120 s (210 s), and a one-thread pool starves the next task', async () => {
    start({ workers: 1 });
    emulator.addFault({ kind: 'server_error_empty' });
    const t0 = clock.now();
    const a = ask('orchestrator');
    const b = ask('telegram-outbox-flusher');
    await driveSleeps(() => a.turn !== undefined && b.turn !== undefined);

    const rounds = (agent: string) => attempts(agent).map((e) => [e.data.startedAt - t0, e.data.model]);
    expect(rounds('orchestrator')).toEqual([
      [0, 'gpt-5.5'],
      [0, 'claude-sonnet-4-6'],
      [30_000, 'gpt-5.5'],
      [30_000, 'claude-sonnet-4-6'],
      [90_000, 'gpt-5.5'],
      [90_000, 'claude-sonnet-4-6'],
      [210_000, 'gpt-5.5'],
      [210_000, 'claude-sonnet-4-6'],
    ]);
    expect(a.turn!).toMatchObject({ outcome: 'failed', attempts: 8, waitMs: 210_000 });
    expect(a.turn!.error).toMatch(/every model failed after 3 retries \(last: server_error 500\)/);

    // The flusher (noAgent, but every cron goes through the LLM here) waited for the only thread.
    expect(rounds('telegram-outbox-flusher')[0]).toEqual([210_000, 'gpt-5.5']);
    expect(b.turn!).toMatchObject({ outcome: 'failed', startedAt: t0, waitMs: 420_000 });
  });

  it('has no semaphore: every firing’s call is upstream at once', async () => {
    await emulator.close();
    emulator = await startEmulator({ profile: { seed: 5, latency: { minMs: 5_000, maxMs: 5_000 } }, clock });
    start();
    const names = SPEC.agents.map((a) => a.name);
    const asks = names.map((n) => ask(n));
    // The emulator holds each call for 5 simulated seconds: all seven arrive before any is answered.
    await settle(() => emulator.stats().maxInFlight === names.length);
    await driveUntil(clock, () => asks.every((x) => x.turn !== undefined), { stepMs: 500 });
    expect(asks.map((x) => x.turn!.outcome)).toEqual(names.map(() => 'answered'));
    expect(emulator.stats().maxInFlight).toBe(7);
    const calls = attempts();
    expect(calls).toHaveLength(7);
    const overlap = calls.filter((c) =>
      calls.every((o) => c.data.startedAt < o.at && o.data.startedAt < c.at),
    );
    expect(overlap).toHaveLength(7);
    for (const c of calls) {
      expect(c.data).toMatchObject({ provider: 'openai', model: 'gpt-5.5', status: 200, outcome: 'ok' });
      expect(c.data.latencyMs).toBeGreaterThanOrEqual(5_000);
    }
    const flusher = asks[names.indexOf('telegram-outbox-flusher')]!.turn!;
    expect([flusher.outcome, flusher.tier, flusher.endpointId]).toEqual(['answered', 'ops', 'codex']);
    expect(executor!.memory('analyst-macro').utterances).toHaveLength(1);
  });
});
