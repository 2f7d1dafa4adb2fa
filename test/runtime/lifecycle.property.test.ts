/**
 * The invariants of the core, under random sequences of asks, aborts, agent stops and respawns, lease overruns
 * (calls that hang), 429 / 529 / credit / dropped-connection faults and supervisor stops, against the real
 * emulator over real HTTP:
 * - upstream calls in flight, by the emulator's own record (its high-water mark), never exceed the limit;
 * - every ask settles exactly once (a turn, or `AgentStoppedError` when the agent was already stopped);
 * - after the supervisor stops, no token is held, nothing waits, and nothing is left in flight upstream.
 * Fixed seed and a bounded number of runs: the same sequences every time.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { EmulatorFaultKind } from '../../src/emulator/emulator-types.ts';
import { isAgentStoppedError } from '../../src/core/errors/lifecycle-errors.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import type { AgentHandle } from '../../src/runtime/agent-handle.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';
import { waitFor } from '../support/wait-for.ts';

const AGENTS = ['ag0', 'ag1', 'ag2', 'ag3'] as const;
const FAULTS: readonly EmulatorFaultKind[] = [
  'rate_limit',
  'overloaded',
  'credit_exhausted',
  'connection_reset',
  'hang_before_headers',
];

type Command =
  | { t: 'ask'; agent: number; withSignal: boolean }
  | { t: 'abort'; which: number }
  | { t: 'stopAgent'; agent: number }
  | { t: 'spawn'; agent: number }
  | { t: 'fault'; kind: EmulatorFaultKind; flavor: 'openai' | 'anthropic'; count: number }
  | { t: 'advance'; ms: number }
  | { t: 'io' };

const command: fc.Arbitrary<Command> = fc.oneof(
  {
    weight: 5,
    arbitrary: fc.record({ t: fc.constant('ask' as const), agent: fc.nat(3), withSignal: fc.boolean() }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('abort' as const), which: fc.nat(20) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('stopAgent' as const), agent: fc.nat(3) }) },
  { weight: 1, arbitrary: fc.record({ t: fc.constant('spawn' as const), agent: fc.nat(3) }) },
  {
    weight: 2,
    arbitrary: fc.record({
      t: fc.constant('fault' as const),
      kind: fc.constantFrom(...FAULTS),
      flavor: fc.constantFrom('openai' as const, 'anthropic' as const),
      count: fc.integer({ min: 1, max: 3 }),
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ t: fc.constant('advance' as const), ms: fc.integer({ min: 0, max: 4_000 }) }),
  },
  { weight: 2, arbitrary: fc.record({ t: fc.constant('io' as const) }) },
);

const scenario = fc.record({
  limit: fc.integer({ min: 1, max: 3 }),
  commands: fc.array(command, { minLength: 1, maxLength: 24 }),
  stopWith: fc.constantFrom('drain' as const, 'abort' as const),
});

// Each run gets its own emulator and clock: a request dropped at the end of one run must not be counted
// in the next run's high-water mark.
type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

let emulator: Emulator;
let clock: ManualClock;

/** Real I/O turns (HTTP to the emulator), bounded; no simulated time passes. */
async function io(turns = 30): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
}

interface Ask {
  readonly controller?: AbortController;
  settled: number;
  rejectedStopped: boolean;
}

function spawn(supervisor: Supervisor, i: number): AgentHandle {
  return supervisor.spawnAgent({
    name: AGENTS[i]!,
    chain: i % 2 === 0 ? 'main' : 'solo',
    tier: i < 2 ? 'analysis' : 'ops',
    maxAttempts: 3,
    maxWaitMs: 20_000,
  });
}

async function runScenario(s: Scenario): Promise<void> {
  clock = createManualClock(Date.parse('2026-08-17T07:00:00+09:00'));
  emulator = await startEmulator({ profile: { seed: 17, latency: { minMs: 0, maxMs: 0 } }, clock });
  try {
    await runOn(s);
  } finally {
    await emulator.close();
  }
}

async function runOn(s: Scenario): Promise<void> {
  const supervisor = createSupervisor(
    {
      endpoints: [
        emulatorEndpoint(emulator, 'a', 'openai', 'gpt-4o-mini', undefined, { headersTimeoutMs: 600_000 }),
        emulatorEndpoint(emulator, 'b', 'anthropic', 'claude-haiku-4-5', undefined, {
          headersTimeoutMs: 600_000,
        }),
      ],
      chains: { main: ['a', 'b'], solo: ['a'] },
      // The unwind waits for cut calls to end for up to reclaimGraceMs of real time: on a loaded machine a cut
      // call's socket teardown took over 1 s, and stop() then returned with its token still held. 30 s is a
      // deadline only a hang reaches.
      concurrency: { limit: s.limit, leaseMs: 3_000, reclaimGraceMs: 30_000 },
      retry: { baseBackoffMs: 200, maxBackoffMs: 2_000 },
      creditCooldownMs: 20_000,
    },
    { clock, random: () => 0.5, keepAlive: false },
  );
  const handles: (AgentHandle | undefined)[] = AGENTS.map((_, i) => spawn(supervisor, i));
  const asks: Ask[] = [];
  const check = (where: string) => {
    expect(emulator.stats().maxInFlight, `upstream calls in flight after ${where}`).toBeLessThanOrEqual(
      s.limit,
    );
    expect(supervisor.tokens().held, `tokens held after ${where}`).toBeLessThanOrEqual(s.limit);
  };

  for (const [n, c] of s.commands.entries()) {
    const where = `command ${n} ${JSON.stringify(c)}`;
    switch (c.t) {
      case 'ask': {
        const h = handles[c.agent];
        if (!h) break;
        const controller = c.withSignal ? new AbortController() : undefined;
        const ask: Ask = { ...(controller ? { controller } : {}), settled: 0, rejectedStopped: false };
        asks.push(ask);
        h.ask(`work ${n}`, controller ? { signal: controller.signal } : {}).then(
          () => ask.settled++,
          (e) => {
            ask.settled++;
            ask.rejectedStopped = isAgentStoppedError(e);
          },
        );
        break;
      }
      case 'abort': {
        const withSignal = asks.filter((a) => a.controller);
        withSignal[c.which % Math.max(1, withSignal.length)]?.controller?.abort(new Error('caller gave up'));
        break;
      }
      case 'stopAgent':
        handles[c.agent]?.stop();
        handles[c.agent] = undefined;
        break;
      case 'spawn':
        if (!handles[c.agent]) handles[c.agent] = spawn(supervisor, c.agent);
        break;
      case 'fault':
        emulator.addFault({ kind: c.kind, match: { flavor: c.flavor }, count: c.count, retryAfterMs: 1_500 });
        break;
      case 'advance':
        clock.advance(c.ms);
        break;
      case 'io':
        break;
    }
    await io();
    check(where);
  }

  // Stop: drain (asks finish on their own as time passes) or cancel everything at once.
  const controller = new AbortController();
  if (s.stopWith === 'abort') controller.abort();
  let stopped = false;
  void supervisor.stop({ signal: controller.signal }).then(() => (stopped = true));
  for (let step = 0; !stopped && step < 400; step++) {
    await io(10);
    // At least a real millisecond per step: a call cut on our side hands its token on a few real ms after it
    // ended (socket teardown, not simulated time), and 400 steps of bare I/O turns can take less than that on a
    // fast machine. A slower machine only makes each step longer.
    await new Promise((resolve) => setTimeout(resolve, 1));
    if (!stopped) clock.advance(1_000);
    check(`stop step ${step}`);
  }
  expect(stopped, 'the supervisor stopped within 400 simulated seconds').toBe(true);
  await io();
  if (process.env.BW_PROP_DEBUG)
    console.log(
      emulator
        .stats()
        .calls.map(
          (c) => `${c.flavor}:${c.status}@${c.startedAt % 1e6}-${c.endedAt % 1e6}/${c.inFlightAtStart}`,
        )
        .join(' '),
    );
  for (const [i, a] of asks.entries()) expect(a.settled, `ask ${i} settled exactly once`).toBe(1);
  expect(supervisor.tokens()).toMatchObject({ held: 0, queue: [] });
  expect(supervisor.state()).toBe('stopped');
  // Whatever was cancelled has ended upstream too.
  await waitFor(() => emulator.stats().inFlight === 0, 'every cancelled call to end at the emulator');
  expect(emulator.stats().maxInFlight).toBeLessThanOrEqual(s.limit);
  // A stopped supervisor refuses new work with a typed error.
  await expect(handles.find((h) => h)?.ask('late') ?? Promise.reject(new Error('none'))).rejects.toSatisfy(
    (e: unknown) => isAgentStoppedError(e) || (e as Error).message === 'none',
  );
}

describe('core invariants under random asks, aborts, stops and faults (fast-check, fixed seed)', () => {
  it('never more calls in flight than the limit; every ask settles once; nothing held after stop', async () => {
    await fc.assert(fc.asyncProperty(scenario, runScenario), {
      seed: Number(process.env.BW_PROP_SEED ?? 20261201),
      numRuns: Number(process.env.BW_PROP_RUNS ?? 40),
      ...(process.env.BW_PROP_PATH ? { path: process.env.BW_PROP_PATH } : {}),
      endOnFailure: true,
    });
  }, 240_000);
});
