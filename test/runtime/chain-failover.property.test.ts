/**
 * Failover across a chain under random fault schedules (issue 31), against the real emulator over real HTTP, on one
 * virtual clock shared with it (stalls cost their deadline in simulated time only):
 * - no turn degrades while an endpoint of its chain that is healthy (its schedule has no fault for it) was never
 *   tried by the turn: the retry budget and `maxAttempts` limit retries, not fallbacks;
 * - a turn whose chain has a healthy endpoint is answered;
 * - every ask settles exactly once, with a turn;
 * - upstream calls in flight, by the emulator's own record, never exceed the token limit; none is held at the end;
 * - no agent cools longer than its max wait between two calls.
 * Fixed seed and a bounded number of runs: the same schedules every time.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createVirtualClock } from '../../src/clock/virtual-clock.ts';
import type { EmulatorFaultKind, EmulatorFlavor } from '../../src/emulator/emulator-types.ts';
import { startEmulator } from '../../src/emulator/emulator-server.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import type { Turn } from '../../src/core/turn.ts';
import { emulatorEndpoint, settle } from '../support/runtime-harness.ts';

const ENDPOINTS: readonly { id: string; flavor: EmulatorFlavor; model: string; key: string }[] = [
  { id: 'e0', flavor: 'openai', model: 'gpt-4o-mini', key: 'sk-chain-e0-00000000000001' },
  { id: 'e1', flavor: 'anthropic', model: 'claude-haiku-4-5', key: 'sk-chain-e1-00000000000001' },
  { id: 'e2', flavor: 'gemini', model: 'gemini-2.5-flash', key: 'sk-chain-e2-00000000000001' },
];
const DEADLINE_MS = 2_000;

/** Faults that fire on any call, and those only a streamed call meets. */
const ANY_CALL: readonly EmulatorFaultKind[] = [
  'hang_before_headers',
  'stall_after_headers',
  'overloaded',
  'server_error_empty',
  'rate_limit',
  'connection_reset',
  'credit_exhausted',
  'bad_key',
];
const STREAM_ONLY: readonly EmulatorFaultKind[] = ['stream_stall', 'stream_cut', 'stream_error'];

/**
 * One endpoint's schedule: healthy; a fault on every call (`count` absent) or on its first `count` calls; or a key
 * whose tokens-per-minute limit is smaller than any request (`tooLarge`: OpenAI says "Request too large", the others
 * answer their rate-limit 429).
 */
type Schedule =
  | { healthy: true }
  | { healthy: false; tooLarge: true }
  | { healthy: false; kind: EmulatorFaultKind; count?: number; afterChunks: number };

const schedule = (stream: boolean): fc.Arbitrary<Schedule> =>
  fc.oneof(
    { weight: 2, arbitrary: fc.constant({ healthy: true as const }) },
    { weight: 1, arbitrary: fc.constant({ healthy: false as const, tooLarge: true as const }) },
    {
      weight: 3,
      arbitrary: fc.record(
        {
          healthy: fc.constant(false as const),
          kind: fc.constantFrom(...ANY_CALL, ...(stream ? STREAM_ONLY : [])),
          count: fc.integer({ min: 1, max: 2 }),
          afterChunks: fc.integer({ min: 0, max: 1 }),
        },
        { requiredKeys: ['healthy', 'kind', 'afterChunks'] },
      ),
    },
  );

const scenario = fc.boolean().chain((stream) =>
  fc.record({
    stream: fc.constant(stream),
    limit: fc.integer({ min: 1, max: 3 }),
    maxAttempts: fc.integer({ min: 1, max: 3 }),
    minRetriesPerWindow: fc.integer({ min: 0, max: 2 }),
    schedules: fc.tuple(schedule(stream), schedule(stream), schedule(stream)),
    // Each agent's chain: some endpoints, in some order.
    chains: fc.array(fc.shuffledSubarray([0, 1, 2], { minLength: 1 }), { minLength: 3, maxLength: 3 }),
    turnsPerAgent: fc.integer({ min: 1, max: 3 }),
    // Max waits shorter than a stall's opening and than a probe's deadline, and the default.
    maxWaitMs: fc.constantFrom(1_500, 4_000, 10_000),
    stallOpenMs: fc.constantFrom(1_000, 5_000),
  }),
);
type Scenario = typeof scenario extends fc.Arbitrary<infer T> ? T : never;

/** The endpoints a turn went to: each fault names its endpoint, the answer names the last one. */
function triedBy(turn: Turn): Set<string> {
  const tried = new Set(turn.faults.map((f) => f.endpointId).filter((id): id is string => id !== undefined));
  if (turn.endpointId) tried.add(turn.endpointId);
  return tried;
}

async function run(s: Scenario): Promise<void> {
  const clock = createVirtualClock({ origin: Date.parse('2026-08-17T07:00:00+09:00') });
  const tight = s.schedules.flatMap((sch, i) => ('tooLarge' in sch ? [ENDPOINTS[i]!] : []));
  const emulator = await startEmulator({
    profile: {
      seed: 31,
      latency: { minMs: 0, maxMs: 0 },
      acceptAnyKey: true,
      keys: tight.map((e) => ({ alias: e.id, key: e.key, quotas: { default: { tpm: 5, itpm: 5 } } })),
    },
    clock,
  });
  const coolingGaps = coolingPerGap();
  const supervisor = createSupervisor(
    {
      endpoints: ENDPOINTS.map((e) =>
        emulatorEndpoint(emulator, e.id, e.flavor, e.model, e.key, {
          headersTimeoutMs: DEADLINE_MS,
          idleTimeoutMs: DEADLINE_MS,
        }),
      ),
      chains: Object.fromEntries(s.chains.map((c, i) => [`chain${i}`, c.map((e) => ENDPOINTS[e]!.id)])),
      concurrency: { limit: s.limit },
      retry: { budgetRatio: 0, minRetriesPerWindow: s.minRetriesPerWindow },
      breaker: { stallOpenMs: s.stallOpenMs },
      agentDefaults: { maxAttempts: s.maxAttempts, maxWaitMs: s.maxWaitMs },
    },
    { clock, random: () => 0.5, onEvent: coolingGaps.onEvent },
  );
  try {
    s.schedules.forEach((sch, i) => {
      if (sch.healthy || 'tooLarge' in sch) return;
      emulator.addFault({
        kind: sch.kind,
        match: { key: ENDPOINTS[i]!.key },
        ...(sch.count !== undefined ? { count: sch.count } : {}),
        ...(STREAM_ONLY.includes(sch.kind) ? { afterChunks: sch.afterChunks } : {}),
      });
    });
    const healthy = new Set(s.schedules.flatMap((sch, i) => (sch.healthy ? [ENDPOINTS[i]!.id] : [])));
    let settled = 0;
    const perAgent = s.chains.map(async (_, i) => {
      const agent = supervisor.spawnAgent({ name: `agent${i}`, chain: `chain${i}` });
      const turns: Turn[] = [];
      for (let n = 0; n < s.turnsPerAgent; n++) {
        const prompt = `agent ${i}, question ${n}`;
        let turn: Turn | undefined;
        if (!s.stream) turn = await agent.ask(prompt);
        else for await (const e of agent.stream(prompt)) if (e.type === 'done') turn = e.turn;
        settled++;
        turns.push(turn!);
      }
      return turns;
    });
    const turns = await Promise.all(perAgent);
    expect(settled).toBe(s.chains.length * s.turnsPerAgent);
    expect(emulator.stats().maxInFlight, 'calls in flight upstream').toBeLessThanOrEqual(s.limit);
    for (const [i, agentTurns] of turns.entries()) {
      const chain = s.chains[i]!.map((e) => ENDPOINTS[e]!.id);
      const healthyInChain = chain.filter((id) => healthy.has(id));
      for (const turn of agentTurns) {
        const where = `agent${i} chain [${chain.join(', ')}] turn ${turn.turnId}: ${turn.outcome} (${turn.degradedReason ?? ''}) faults ${JSON.stringify(turn.faults.map((f) => [f.endpointId, f.kind]))}`;
        const tried = triedBy(turn);
        if (turn.outcome === 'degraded')
          expect(
            healthyInChain.filter((id) => !tried.has(id)),
            `healthy endpoints never tried by a degraded turn — ${where}`,
          ).toEqual([]);
        if (healthyInChain.length > 0) expect(['answered', 'fallback'], where).toContain(turn.outcome);
      }
    }
    // Max wait bounds each wait between two calls: the time cooled in it, never the queue for a free token.
    expect(coolingGaps.worst(), 'longest cooling between two calls (ms)').toBeLessThanOrEqual(s.maxWaitMs);
    await settle(() => supervisor.tokens().held === 0);
  } finally {
    await supervisor.stop();
    await emulator.close();
    clock.stop();
  }
}

/**
 * Each agent's time in `cooling` summed over each wait between two calls (from leaving a call, or the ask, to the next
 * call or the turn's end), read from its `agent.state` events on the run clock.
 */
function coolingPerGap(): { onEvent: (e: RuntimeEvent) => void; worst: () => number } {
  const per = new Map<string, { state: string; since: number; cooled: number }>();
  let worst = 0;
  const calling = (s: string) => s === 'calling' || s === 'fallback';
  return {
    onEvent(e) {
      if (e.type !== 'agent.state' || e.agent === undefined) return;
      const next = (e.data as { state: string }).state;
      const a = per.get(e.agent) ?? { state: 'idle', since: e.at, cooled: 0 };
      if (a.state === 'cooling') a.cooled += e.at - a.since;
      if (calling(next) || next === 'idle' || next === 'degraded') {
        worst = Math.max(worst, a.cooled);
        a.cooled = 0;
      }
      a.state = next;
      a.since = e.at;
      per.set(e.agent, a);
    },
    worst: () => worst,
  };
}

describe('failover across a chain under random fault schedules (fast-check, fixed seed)', () => {
  it('no turn degrades while a healthy endpoint of its chain was never tried; asks settle once; the cap holds', async () => {
    await fc.assert(fc.asyncProperty(scenario, run), { seed: 3131, numRuns: 30, endOnFailure: true });
  }, 600_000);
});
