/**
 * bench:goodput — how close breakwater gets to the quota bound under a storm, against the baselines.
 *
 * The agent8-storm scenario (8 agents × 35 items × 3 rounds; the shared primary pool's credit gone in round 1,
 * a dropped connection, 429 storms, 504s and overload on the backups; per-key quotas; 0.4–2 s latency),
 * replayed at its timeScale against the emulator, five ways in one run, each system in its own process against its
 * own fresh emulator (`bench/lib/goodput-child.ts`), so its CPU is its own:
 * - `breakwater`: `runScenario` with the breakwater policy (supervisor, tiered chains, breakers, pacing);
 * - `status-quo`: `runScenario` with seed 000's worker (model-name cooldown map, blocking 30/60/120 s sleeps,
 *   one two-model chain, no semaphore);
 * - `bare SDK`: every agent calls its chain's first endpoint with the OpenAI SDK as shipped (default retries),
 *   no fallback (`bench/lib/bare-sdk-run.ts`);
 * - `ai-fallback` and `cockatiel`: issue 34's peers, what a TypeScript team would build instead
 *   (`bench/lib/peer-ai-fallback.ts`, `bench/lib/peer-cockatiel.ts`).
 * For each: makespan (simulated) ÷ the quota lower bound of its logical calls (`bench/lib/quota-bound.ts`),
 * failed turns, upstream 429s ÷ upstream calls, upstream calls ÷ logical calls (retries of one logical call
 * share its idempotency key; breakwater's HALF-OPEN probes count as upstream calls), and side by side
 * (`bench/lib/goodput-table.ts`): answered / degraded / failed, top and lowest tier done into their round, 429s,
 * the emulator's max in flight, client CPU per logical call, and breakwater against issue 34's targets.
 *
 * Time: by default the run is on a virtual clock (simulated time stands still while the machine works and jumps
 * when only timers are left), so the makespan measures scheduling alone, the thing the quota bound bounds.
 * `--scaled-time` runs at the scenario's timeScale on the real clock instead: every real millisecond the host spends
 * per call (HTTP, JSON, the store) then counts timeScale times, which measures this machine as much as the policy.
 * The peers and the bare SDK sleep on real timers, so they always run at the scaled clock (the table says so).
 *
 * Run: `npm run bench:goodput` (`--scaled-time`; `--runs N` interleaves N runs of every system and prints medians;
 * `--breakwater-only` runs breakwater alone in this process, for a profile).
 */
import { AGENT_MACHINE_VERSION } from '../machines/agent.machine.ts';
import { loadScenario } from '../src/scenarios/load-scenario.ts';
import { loadavg } from 'node:os';
import { writeResult } from './lib/bench-result.ts';
import { figures, medianFigures, type PolicyFigures, workloadBound } from './lib/goodput-figures.ts';
import { runSystem, SYSTEMS, type SystemName, type SystemRun } from './lib/goodput-system.ts';
import {
  clientCpu,
  emulatorMsPerUpstream,
  ISSUE_34_TARGETS,
  issue34Met,
  printSideBySide,
} from './lib/goodput-table.ts';
import { percentile, round } from './lib/stats.ts';
import { runSystemProcess } from './lib/system-process.ts';
import { timeBreakdown } from './lib/time-breakdown.ts';

/** Virtual time unless `--scaled-time` (see the header). */
const VIRTUAL = !process.argv.includes('--scaled-time');
/** `--jitter-seed N`: breakwater's backoff jitter seed on the virtual clock (default: the scenario's emulator seed). */
const JITTER_SEED = ((i) => (i < 0 ? undefined : Number(process.argv[i + 1])))(
  process.argv.indexOf('--jitter-seed'),
);
if (JITTER_SEED !== undefined && !Number.isInteger(JITTER_SEED))
  throw new Error('--jitter-seed takes an integer, e.g. `npm run bench:goodput -- --jitter-seed 2`');
/** `--runs N`: N interleaved runs of every system (default 1); the table prints medians. */
const RUNS = ((i) => (i < 0 ? 1 : Number(process.argv[i + 1])))(process.argv.indexOf('--runs'));
if (!Number.isInteger(RUNS) || RUNS < 1) throw new Error('--runs takes a positive integer, e.g. `--runs 3`');

async function main(): Promise<void> {
  const spec = loadScenario('scenarios/agent8-storm');
  const clock = VIRTUAL ? 'on a virtual clock' : `at timeScale ${spec.timeScale}`;
  if (process.argv.includes('--breakwater-only')) {
    // For profiling breakwater alone (`node --cpu-prof`): in this process; print where its time went, write nothing.
    console.log(`agent8-storm ${clock}: breakwater alone`);
    const bw = await runSystem(spec, 'breakwater', {
      virtual: VIRTUAL,
      ...(JITTER_SEED !== undefined ? { jitterSeed: JITTER_SEED } : {}),
    });
    console.dir(bw.time, { depth: 4 });
    return;
  }
  const flags = [
    ...(VIRTUAL ? [] : ['--scaled-time']),
    ...(JITTER_SEED !== undefined ? ['--jitter-seed', String(JITTER_SEED)] : []),
  ];
  // Interleaved: run i of every system before run i + 1 of any, so a change in the machine's load is shared.
  const perRun: Record<SystemName, PolicyFigures>[] = [];
  const breakwaterRuns: SystemRun[] = [];
  const load: Record<string, number[]> = {};
  for (let i = 1; i <= RUNS; i++) {
    const runs = {} as Record<SystemName, SystemRun>;
    for (const system of SYSTEMS) {
      console.log(`agent8-storm ${clock}, run ${i}/${RUNS}: ${system}`);
      const l = load[system] ?? [];
      load[system] = l;
      l.push(loadavg()[0] ?? 0);
      runs[system] = await runSystemProcess(system, flags);
      l.push(loadavg()[0] ?? 0);
    }
    // One bound for every system, from breakwater's logical calls: a system that fails a turn early does not
    // shrink the work.
    const workload = workloadBound(spec, runs.breakwater);
    perRun.push(
      Object.fromEntries(SYSTEMS.map((s) => [s, figures(spec, workload, runs[s])])) as Record<
        SystemName,
        PolicyFigures
      >,
    );
    breakwaterRuns.push(runs.breakwater);
  }
  const all = Object.fromEntries(SYSTEMS.map((s) => [s, medianFigures(perRun.map((r) => r[s]))])) as Record<
    SystemName,
    PolicyFigures
  >;
  printSideBySide(all, { virtual: VIRTUAL, runs: RUNS, load });

  // breakwater's own detail from its median run (by makespan ÷ bound): a run that happened, not a mix.
  const median = percentile(
    perRun.map((r) => r.breakwater.makespanOverBound),
    50,
  );
  const at = perRun.findIndex((r) => r.breakwater.makespanOverBound === median);
  const breakwater = perRun[at]!.breakwater;
  const bwRun = breakwaterRuns[at]!;
  const t = bwRun.time ?? timeBreakdown([], breakwater.makespanMs, spec.runtime.concurrency?.limit ?? 3);
  const b = workloadBound(spec, bwRun);
  const targets = { makespanOverBound: 1.15, failedTurns: 0, upstream429Ratio: 0.01 };
  const met = {
    makespanOverBound: breakwater.makespanOverBound <= targets.makespanOverBound,
    failedTurns: breakwater.failedTurns <= targets.failedTurns,
    upstream429Ratio: breakwater.upstream429Ratio <= targets.upstream429Ratio,
  };
  const mark = (ok: boolean) => (ok ? 'met' : 'MISSED');
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

  const em = emulatorMsPerUpstream(all);
  const path = await writeResult('goodput', {
    makespanOverBound: breakwater.makespanOverBound,
    clock: VIRTUAL ? 'virtual' : `scaled ×${spec.timeScale}`,
    ...(VIRTUAL ? { jitterSeed: JITTER_SEED ?? spec.emulator?.seed ?? 1 } : {}),
    tierAgingMs: spec.runtime.tierAgingMs ?? null,
    failedTurns: breakwater.failedTurns,
    upstream429Ratio: breakwater.upstream429Ratio,
    amplification: breakwater.amplification,
    baselines: {
      bareSdk: perRun[at]!['bare SDK'],
      statusQuo: perRun[at]!['status-quo'],
      aiFallback: perRun[at]!['ai-fallback'],
      cockatiel: perRun[at]!.cockatiel,
    },
    targets,
    met,
    breakwater,
    breakwaterTime: t,
    bound: {
      ...b,
      endpoints: b.endpoints.map((e) => ({ ...e, rpm: round(e.rpm, 1), tpm: Math.round(e.tpm) })),
    },
    // Issue 34: every system side by side (medians over the runs), and breakwater against the issue's targets.
    runs: RUNS,
    sideBySide: Object.fromEntries(
      Object.entries(all).map(([s, f]) => [s, { ...f, clientCpuPerLogicalCall: clientCpu(f, em) }]),
    ),
    loadBySystem: load,
    issue34: { targets: ISSUE_34_TARGETS, met: issue34Met(all, VIRTUAL) },
    scenario: {
      name: spec.name,
      timeScale: spec.timeScale,
      agents: spec.agents.length,
      items: spec.rounds?.items.length,
      rounds: spec.rounds?.count,
      machineVersion: AGENT_MACHINE_VERSION,
    },
    measuredAs:
      'makespan in simulated ms (run.started → run.finished on the run clock: virtual by default, scaled with --scaled-time; bare SDK and the peers: real ms × timeScale either way); one bound for every system from breakwater’s logical calls and their tokens (first 200 per logical call); 429s, upstream calls and max in flight from each system’s own fresh emulator; CPU from each system’s own process (process.cpuUsage over its run; on the virtual clock breakwater’s and status-quo’s include their in-process emulator, whose share is estimated and taken off in sideBySide.clientCpuPerLogicalCall); the baselines and breakwater objects are breakwater’s median run, sideBySide the medians',
  });
  console.log(`wrote ${path}`);
}

await main();
