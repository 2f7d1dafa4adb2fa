/**
 * bench:goodput — how close breakwater gets to the quota bound under a storm, against the baselines.
 *
 * The agent8-storm scenario (8 agents × 35 items × 3 rounds; the shared primary pool's credit gone in round 1,
 * a dropped connection, 429 storms, 504s and overload on the backups; per-key quotas; 0.4–2 s latency),
 * replayed at its timeScale against the emulator, three ways in one run:
 * - `breakwater`: `runScenario` with the breakwater policy (supervisor, tiered chains, breakers, pacing);
 * - `status-quo`: `runScenario` with seed 000's worker (model-name cooldown map, blocking 30/60/120 s sleeps,
 *   one two-model chain, no semaphore);
 * - `bare SDK`: every agent calls its chain's first endpoint with the OpenAI SDK as shipped (default retries),
 *   no fallback (`bench/lib/bare-sdk-run.ts`).
 * For each: makespan (simulated) ÷ the quota lower bound of its logical calls (`bench/lib/quota-bound.ts`),
 * failed turns, upstream 429s ÷ upstream calls, upstream calls ÷ logical calls (retries of one logical call
 * share its idempotency key; breakwater's HALF-OPEN probes count as upstream calls).
 *
 * Time: by default the run is on a virtual clock (simulated time stands still while the machine works and jumps
 * when only timers are left), so the makespan measures scheduling alone, the thing the quota bound bounds.
 * `--scaled-time` runs at the scenario's timeScale on the real clock instead: every real millisecond the host spends
 * per call (HTTP, JSON, the store) then counts timeScale times, which measures this machine as much as the policy.
 *
 * Run: `npm run bench:goodput` (`--scaled-time`, `--breakwater-only` for a profile of breakwater alone).
 */
import { AGENT_MACHINE_VERSION } from '../machines/agent.machine.ts';
import type { CallRecord, EmulatorStats } from '../src/emulator/emulator-types.ts';
import type { RuntimeEvent } from '../src/core/runtime-event.ts';
import { type RunPolicy, runScenario } from '../src/runs/run-scenario.ts';
import { loadScenario } from '../src/scenarios/load-scenario.ts';
import type { ScenarioSpec } from '../src/scenarios/scenario-types.ts';
import { IN_MEMORY, openDatabase } from '../src/store/open-database.ts';
import { createRunStore } from '../src/store/run-store.ts';
import { runBareSdk } from './lib/bare-sdk-run.ts';
import { row, writeResult } from './lib/bench-result.ts';
import { logicalCallsOf, type QuotaBound, quotaBound } from './lib/quota-bound.ts';
import { round } from './lib/stats.ts';

interface PolicyFigures {
  readonly makespanOverBound: number;
  readonly failedTurns: number;
  readonly upstream429Ratio: number;
  readonly amplification: number;
  readonly makespanMs: number;
  readonly boundMs: number;
  readonly binding: QuotaBound['binding'];
  readonly turns: number;
  readonly degradedTurns?: number;
  readonly upstreamCalls: number;
  readonly upstream429s: number;
  readonly upstream429sByCause: Record<string, number>;
  readonly logicalCalls: number;
  readonly tokens: number;
  readonly byStatus: Record<string, number>;
  readonly realMs: number;
  /** The bound of the logical calls this policy actually made (it may skip tools or fail before calling). */
  readonly ownBoundMs: number;
}

function figures(
  spec: ScenarioSpec,
  workload: QuotaBound,
  stats: EmulatorStats,
  logicalKey: (key: string) => string | undefined,
  run: { makespanMs: number; turns: number; failedTurns: number; degradedTurns?: number; realMs: number },
): PolicyFigures & { bound: QuotaBound } {
  const calls: readonly CallRecord[] = stats.calls;
  if (stats.totalCalls !== calls.length)
    throw new Error('the emulator dropped call records; runs are too long');
  const { logicalCalls, tokens } = logicalCallsOf(calls, logicalKey);
  const own = quotaBound(spec, logicalCalls, tokens);
  const bound = workload;
  const upstream429s = stats.byStatus['429'] ?? 0;
  // Whose 429s: an injected storm rule (`fault` on the record) or the emulator's own quota/credit refusal.
  const by429: Record<string, number> = {};
  for (const c of calls) {
    if (c.status !== 429) continue;
    const cause = `${c.key} ${c.fault ?? 'quota window or credit'}`;
    by429[cause] = (by429[cause] ?? 0) + 1;
  }
  return {
    makespanOverBound: round(run.makespanMs / bound.boundMs),
    failedTurns: run.failedTurns,
    upstream429Ratio: round(upstream429s / Math.max(1, stats.totalCalls), 5),
    amplification: round(stats.totalCalls / Math.max(1, logicalCalls)),
    makespanMs: Math.round(run.makespanMs),
    boundMs: Math.round(bound.boundMs),
    binding: bound.binding,
    turns: run.turns,
    ...(run.degradedTurns !== undefined ? { degradedTurns: run.degradedTurns } : {}),
    upstreamCalls: stats.totalCalls,
    upstream429s,
    upstream429sByCause: by429,
    logicalCalls,
    tokens: Math.round(tokens),
    byStatus: stats.byStatus,
    realMs: run.realMs,
    ownBoundMs: Math.round(own.boundMs),
    bound,
  };
}

/**
 * Where breakwater's makespan went, from its own event log: how busy the concurrency tokens were (Σ call
 * time ÷ tokens × makespan), the observed call latency per endpoint, why agents waited, and each round's span.
 */
function timeBreakdown(events: readonly RuntimeEvent[], makespanMs: number, tokens: number) {
  const calls = events.filter(
    (e): e is Extract<RuntimeEvent, { type: 'call.attempt' }> => e.type === 'call.attempt',
  );
  const busyMs = calls.reduce((n, c) => n + c.data.latencyMs, 0);
  const faultMs = calls.filter((c) => c.data.outcome === 'fault').reduce((n, c) => n + c.data.latencyMs, 0);
  const byEndpoint: Record<string, { calls: number; meanLatencyMs: number; faults: number }> = {};
  for (const c of calls) {
    byEndpoint[c.endpoint ?? '?'] ??= { calls: 0, meanLatencyMs: 0, faults: 0 };
    const e = byEndpoint[c.endpoint ?? '?']!;
    e.meanLatencyMs += c.data.latencyMs;
    e.calls++;
    if (c.data.outcome === 'fault') e.faults++;
  }
  for (const e of Object.values(byEndpoint)) e.meanLatencyMs = Math.round(e.meanLatencyMs / e.calls);
  // Lease time: grant → release. What a token is held for beyond the upstream call is the runtime's own
  // time inside a lease (result bookkeeping, the durable memo write, actor hops), in simulated ms.
  const granted = new Map<string, number>();
  let leaseMs = 0;
  let leases = 0;
  for (const e of events) {
    if (e.type === 'token.granted') granted.set(e.data.leaseId, e.at);
    if (e.type === 'token.released') {
      const at = granted.get(e.data.leaseId);
      if (at !== undefined) {
        leaseMs += e.at - at;
        leases++;
      }
    }
  }
  // Share of the makespan spent with k tokens held (k = 0 … tokens; HALF-OPEN probes hold one too).
  const held: number[] = Array.from({ length: tokens + 2 }, () => 0);
  const active = new Set<string>();
  let last = events.find((e) => e.type === 'run.started')?.at ?? 0;
  for (const e of events) {
    if (e.type !== 'token.granted' && e.type !== 'token.released' && e.type !== 'probe.started') continue;
    held[Math.min(active.size, tokens + 1)]! += e.at - last;
    last = e.at;
    if (e.type === 'token.released') active.delete(e.data.leaseId);
    else active.add(e.data.leaseId);
  }
  const heldShare = Object.fromEntries(held.map((ms, k) => [String(k), round(ms / makespanMs)]));
  const underused = underusedTime(events, tokens);
  const underusedShareByCause = Object.fromEntries(
    Object.entries(underused).map(([cause, ms]) => [cause, round(ms / makespanMs)]),
  );
  const waits: Record<string, number> = {};
  for (const e of events) if (e.type === 'token.wait') waits[e.data.cause] = (waits[e.data.cause] ?? 0) + 1;
  const denied = events.filter((e) => e.type === 'token.denied').length;
  const starts = new Map<number, number>();
  const rounds: { round: number; spanMs: number; lastTurnByAgentMs: Record<string, number> }[] = [];
  const lastTurn = new Map<number, Record<string, number>>();
  for (const e of events) {
    if (e.type === 'round.started') starts.set(e.data.round, e.at);
    if (e.type === 'turn.completed' && e.data.round !== undefined && e.agent) {
      const byAgent = lastTurn.get(e.data.round) ?? {};
      byAgent[e.agent] = Math.round(e.at - (starts.get(e.data.round) ?? e.at));
      lastTurn.set(e.data.round, byAgent);
    }
    if (e.type === 'round.committed')
      rounds.push({
        round: e.data.round,
        spanMs: Math.round(e.at - (starts.get(e.data.round) ?? e.at)),
        // When each agent finished its last turn of the round: the spread is the round's tail.
        lastTurnByAgentMs: lastTurn.get(e.data.round) ?? {},
      });
  }
  return {
    tokens,
    tokenUtilization: round(busyMs / (tokens * makespanMs)),
    tokensHeldShare: round(leaseMs / (tokens * makespanMs)),
    meanLeaseMs: Math.round(leaseMs / Math.max(1, leases)),
    shareOfMakespanWithTokensHeld: heldShare,
    // Why fewer tokens were held than there are: what the agents were doing meanwhile (shares of the makespan).
    underusedShareByCause,
    meanHeldBeyondCallMs: Math.round((leaseMs - busyMs) / Math.max(1, leases)),
    callTimeMs: Math.round(busyMs),
    faultedCallTimeMs: Math.round(faultMs),
    meanCallLatencyMs: Math.round(busyMs / Math.max(1, calls.length)),
    byEndpoint,
    tokenWaitsByCause: waits,
    tokenDenials: denied,
    rounds,
  };
}

/**
 * The time fewer tokens were held than available, by why: some agent queued (its endpoints paced, at their
 * concurrency cap or AIMD limit: parked in the scheduler), else some agent cooling (every usable endpoint in
 * cooldown / open / disabled), else some agent running tools (no token needed), else no demand (every agent with
 * work left is done: the end of a round, before its commit). In simulated ms.
 */
function underusedTime(events: readonly RuntimeEvent[], tokens: number): Record<string, number> {
  const states = new Map<string, string>();
  const leases = new Set<string>();
  const out: Record<string, number> = {
    'queued: endpoints paced, at their cap or AIMD limit': 0,
    'cooling: every usable endpoint cooling': 0,
    'tools: agents running tools (no token)': 0,
    'no demand: round tail or commit': 0,
  };
  let last = events.find((e) => e.type === 'run.started')?.at ?? 0;
  for (const e of events) {
    if (leases.size < tokens && e.at > last) {
      const values = [...states.values()];
      const key = values.includes('queued')
        ? 'queued: endpoints paced, at their cap or AIMD limit'
        : values.includes('cooling')
          ? 'cooling: every usable endpoint cooling'
          : values.includes('tools')
            ? 'tools: agents running tools (no token)'
            : 'no demand: round tail or commit';
      out[key]! += (e.at - last) * ((tokens - leases.size) / tokens);
    }
    last = Math.max(last, e.at);
    if (e.type === 'agent.state' && e.agent) states.set(e.agent, e.data.state);
    if (e.type === 'token.granted' || e.type === 'probe.started') leases.add(e.data.leaseId);
    if (e.type === 'token.released') leases.delete(e.data.leaseId);
  }
  return out;
}

/** Virtual time unless `--scaled-time` (see the header). */
const VIRTUAL = !process.argv.includes('--scaled-time');
/** `--jitter-seed N`: breakwater's backoff jitter seed on the virtual clock (default: the scenario's emulator seed). */
const JITTER_SEED = ((i) => (i < 0 ? undefined : Number(process.argv[i + 1])))(
  process.argv.indexOf('--jitter-seed'),
);
if (JITTER_SEED !== undefined && !Number.isInteger(JITTER_SEED))
  throw new Error('--jitter-seed takes an integer, e.g. `npm run bench:goodput -- --jitter-seed 2`');

async function runPolicy(
  spec: ScenarioSpec,
  policy: RunPolicy,
  database: Awaited<ReturnType<typeof openDatabase>>,
) {
  let startedAt = Number.NaN;
  let finishedAt = Number.NaN;
  const events: RuntimeEvent[] = [];
  const runId = `bench-goodput-${policy}-${Date.now().toString(36)}`;
  const result = await runScenario({
    scenario: spec,
    scenarioSource: 'scenarios/agent8-storm',
    runId,
    policy,
    database,
    ...(VIRTUAL ? { virtualTime: true } : {}),
    ...(VIRTUAL && JITTER_SEED !== undefined ? { jitterSeed: JITTER_SEED } : {}),
    onEvent: (e) => {
      events.push(e);
      if (e.type === 'run.started') startedAt = e.at;
      if (e.type === 'run.finished') finishedAt = e.at;
    },
  });
  if (result.run.status !== 'completed') throw new Error(`${policy} run ended ${result.run.status}`);
  const turns = await createRunStore(database).listTurns(runId);
  const stats = result.emulatorStats;
  if (!stats) throw new Error('runScenario returned no emulator stats');
  return {
    stats,
    events,
    run: {
      makespanMs: finishedAt - startedAt,
      turns: turns.length,
      failedTurns: turns.filter((t) => t.outcome === 'failed').length,
      degradedTurns: turns.filter((t) => t.degraded).length,
      realMs: result.realMs,
    },
  };
}

async function main(): Promise<void> {
  const spec = loadScenario('scenarios/agent8-storm');
  const database = await openDatabase({ dataDir: IN_MEMORY });
  let bw: Awaited<ReturnType<typeof runPolicy>>;
  let sq: Awaited<ReturnType<typeof runPolicy>>;
  try {
    console.log(
      `agent8-storm ${VIRTUAL ? 'on a virtual clock' : `at timeScale ${spec.timeScale}`}: breakwater`,
    );
    bw = await runPolicy(spec, 'breakwater', database);
    if (process.argv.includes('--breakwater-only')) {
      // For profiling breakwater alone (`node --cpu-prof`): print where its time went; nothing is written.
      const b = figures(spec, quotaBound(spec, 1, 1), bw.stats, (k) => k, bw.run);
      console.dir(timeBreakdown(bw.events, b.makespanMs, spec.runtime.concurrency?.limit ?? 3), { depth: 4 });
      return;
    }
    console.log('status-quo (seed 000 worker)');
    sq = await runPolicy(spec, 'status-quo', database);
  } finally {
    await database.close();
  }
  console.log('bare SDK (default retries, no fallback)');
  const bare = await runBareSdk(spec);

  // Breakwater's keys are `<turn key>:call<step>` and reused by retries; probes are `probe:<endpoint>:<n>`.
  const bwKey = (k: string) => (k.startsWith('probe:') ? undefined : k);
  // The workload: every turn answered, with its tool round trips — as breakwater's agents needed it. One bound
  // for every policy, so their makespans compare (a policy that fails a turn early does not shrink the work).
  const work = logicalCallsOf(bw.stats.calls, bwKey);
  const workload = quotaBound(spec, work.logicalCalls, work.tokens);
  const breakwater = figures(spec, workload, bw.stats, bwKey, bw.run);
  // The status-quo worker numbers every attempt (`<turn key>:<n>`): its logical call is the turn.
  const statusQuo = figures(spec, workload, sq.stats, (k) => k.replace(/:\d+$/, ''), sq.run);
  // The bare SDK's retries resend the same Idempotency-Key.
  const bareSdk = figures(spec, workload, bare.emulatorStats, (k) => k, {
    makespanMs: bare.makespanMs,
    turns: bare.turns,
    failedTurns: bare.failedTurns,
    realMs: bare.realMs,
  });

  const targets = { makespanOverBound: 1.15, failedTurns: 0, upstream429Ratio: 0.01 };
  const met = {
    makespanOverBound: breakwater.makespanOverBound <= targets.makespanOverBound,
    failedTurns: breakwater.failedTurns <= targets.failedTurns,
    upstream429Ratio: breakwater.upstream429Ratio <= targets.upstream429Ratio,
  };
  const mark = (ok: boolean) => (ok ? 'met' : 'MISSED');
  const all = { breakwater, 'status-quo': statusQuo, 'bare SDK': bareSdk };
  const line = (label: string, get: (f: PolicyFigures) => number | string) =>
    console.log(row(label, ...Object.values(all).map(get)));

  console.log();
  console.log(row('', ...Object.keys(all)));
  line('makespan (simulated s)', (f) => round(f.makespanMs / 1000, 1));
  line('quota bound (s)', (f) => round(f.boundMs / 1000, 1));
  line('makespan ÷ bound', (f) => f.makespanOverBound);
  line('turns', (f) => f.turns);
  line('failed turns', (f) => f.failedTurns);
  line('answered turns', (f) => f.turns - f.failedTurns - (f.degradedTurns ?? 0));
  line('degraded turns', (f) => f.degradedTurns ?? '—');
  line('logical calls', (f) => f.logicalCalls);
  line('upstream calls', (f) => f.upstreamCalls);
  line('upstream 429s', (f) => f.upstream429s);
  line('429s ÷ upstream calls', (f) => f.upstream429Ratio);
  line('upstream ÷ logical calls', (f) => f.amplification);
  line('real time (s)', (f) => round(f.realMs / 1000, 1));
  const b = breakwater.bound;
  const t = timeBreakdown(bw.events, breakwater.makespanMs, workload.concurrency);
  console.log();
  console.log(
    `breakwater's time: tokens in upstream calls ${round(t.tokenUtilization * 100, 1)} % of ${t.tokens} × makespan, ` +
      `held ${round(t.tokensHeldShare * 100, 1)} % (${t.meanHeldBeyondCallMs} ms per lease beyond the call); ` +
      `mean call ${t.meanCallLatencyMs} ms; faulted calls ${round(t.faultedCallTimeMs / 1000, 1)} s; ` +
      `rounds ${t.rounds.map((r) => `${round(r.spanMs / 1000, 0)} s`).join(' / ')}; waits ${JSON.stringify(t.tokenWaitsByCause)}`,
  );
  console.log(`breakwater's 429s by key and cause: ${JSON.stringify(breakwater.upstream429sByCause)}`);
  console.log(
    `breakwater's bound: max(requests ${b.logicalCalls} ÷ ΣRPM ${round(b.sumRpm, 0)}/min = ${round(b.terms.requestsMs / 1000, 1)} s, ` +
      `tokens ${Math.round(b.tokens)} ÷ ΣTPM ${round(b.sumTpm, 0)}/min = ${round(b.terms.tokensMs / 1000, 1)} s, ` +
      `calls × ${b.meanLatencyMs} ms ÷ concurrency ${b.concurrency} = ${round(b.terms.concurrencyMs / 1000, 1)} s) → ${b.binding}`,
  );
  console.log(
    `breakwater: makespan ÷ bound ${breakwater.makespanOverBound} (target ≤ ${targets.makespanOverBound}: ${mark(met.makespanOverBound)}), ` +
      `failed turns ${breakwater.failedTurns} (target 0: ${mark(met.failedTurns)}), ` +
      `429s ${round(breakwater.upstream429Ratio * 100, 2)} % (target ≤ 1 %: ${mark(met.upstream429Ratio)})`,
  );

  const strip = ({ bound: _b, ...rest }: PolicyFigures & { bound: QuotaBound }) => rest;
  const path = await writeResult('goodput', {
    makespanOverBound: breakwater.makespanOverBound,
    clock: VIRTUAL ? 'virtual' : `scaled ×${spec.timeScale}`,
    ...(VIRTUAL ? { jitterSeed: JITTER_SEED ?? spec.emulator?.seed ?? 1 } : {}),
    tierAgingMs: spec.runtime.tierAgingMs ?? null,
    failedTurns: breakwater.failedTurns,
    upstream429Ratio: breakwater.upstream429Ratio,
    amplification: breakwater.amplification,
    baselines: { bareSdk: strip(bareSdk), statusQuo: strip(statusQuo) },
    targets,
    met,
    breakwater: strip(breakwater),
    breakwaterTime: timeBreakdown(bw.events, breakwater.makespanMs, workload.concurrency),
    bound: {
      ...breakwater.bound,
      endpoints: breakwater.bound.endpoints.map((e) => ({
        ...e,
        rpm: round(e.rpm, 1),
        tpm: Math.round(e.tpm),
      })),
    },
    scenario: {
      name: spec.name,
      timeScale: spec.timeScale,
      agents: spec.agents.length,
      items: spec.rounds?.items.length,
      rounds: spec.rounds?.count,
      machineVersion: AGENT_MACHINE_VERSION,
    },
    measuredAs:
      'makespan in simulated ms (run.started → run.finished on the run clock: virtual by default, scaled with --scaled-time; bare SDK: real ms × timeScale either way); bound per policy from its own logical calls and their tokens (first 200 per logical call); 429s and upstream calls from the emulator’s call records',
  });
  console.log(`wrote ${path}`);
}

await main();
