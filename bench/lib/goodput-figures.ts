import type { CallRecord } from '../../src/emulator/emulator-types.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import type { SystemName, SystemRun } from './goodput-system.ts';
import { logicalCallsOf, type QuotaBound, quotaBound } from './quota-bound.ts';
import { percentile, round } from './stats.ts';

/** One system's figures in one run of the goodput bench. */
export interface PolicyFigures {
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
  readonly clock: string;
  /** Most upstream calls the emulator held at once (its `maxInFlight`). */
  readonly maxInFlight: number;
  /** The first tier's last turn, simulated s after its round started: the median over rounds. */
  readonly topTierDoneS: number;
  /** The same for the last (lowest) tier. */
  readonly lowestTierDoneS: number;
  /** The system process's CPU ms per logical call (with the emulator's when it ran in process). */
  readonly cpuPerLogicalCallMs: number;
  /** The emulator process's CPU ms per upstream call (when it had its own process). */
  readonly emulatorCpuPerUpstreamMs?: number;
  readonly emulatorInProcess: boolean;
}

/** How each system names its logical calls in the Idempotency-Key of its upstream calls. */
export const LOGICAL_KEY: Record<SystemName, (key: string) => string | undefined> = {
  // `<turn key>:call<step>`, reused by retries; HALF-OPEN probes are `probe:<endpoint>:<n>` (not logical calls).
  breakwater: (k) => (k.startsWith('probe:') ? undefined : k),
  // seed 000's worker numbers every attempt (`<turn key>:<n>`): its logical call is the turn.
  'status-quo': (k) => k.replace(/:\d+$/, ''),
  // The SDKs resend the same Idempotency-Key on their retries (and ai-fallback / the cockatiel chain on the
  // next endpoint): one key per `<turn>:call<step>`.
  'bare SDK': (k) => k,
  'ai-fallback': (k) => k,
  cockatiel: (k) => k,
};

/** The workload bound of a bench run: breakwater's logical calls and their tokens, one bound for every system. */
export function workloadBound(spec: ScenarioSpec, breakwater: SystemRun): QuotaBound {
  const work = logicalCallsOf(breakwater.stats.calls, LOGICAL_KEY.breakwater);
  return quotaBound(spec, work.logicalCalls, work.tokens);
}

/** One system's figures against the run's workload bound. */
export function figures(spec: ScenarioSpec, workload: QuotaBound, run: SystemRun): PolicyFigures {
  const stats = run.stats;
  const calls: readonly CallRecord[] = stats.calls;
  if (stats.totalCalls !== calls.length)
    throw new Error('the emulator dropped call records; runs are too long');
  const { logicalCalls, tokens } = logicalCallsOf(calls, LOGICAL_KEY[run.system]);
  const own = quotaBound(spec, logicalCalls, tokens);
  const upstream429s = stats.byStatus['429'] ?? 0;
  // Whose 429s: an injected storm rule (`fault` on the record) or the emulator's own quota/credit refusal.
  const by429: Record<string, number> = {};
  for (const c of calls) {
    if (c.status !== 429) continue;
    const cause = `${c.key} ${c.fault ?? 'quota window or credit'}`;
    by429[cause] = (by429[cause] ?? 0) + 1;
  }
  const tiers = spec.runtime.tiers ?? [];
  const doneS = (tier: string | undefined) =>
    round(
      percentile(
        run.rounds.map((r) => (tier ? (r.doneByTierMs[tier] ?? Number.NaN) : Number.NaN)),
        50,
      ) / 1000,
      1,
    );
  return {
    makespanOverBound: round(run.makespanMs / workload.boundMs),
    failedTurns: run.failedTurns,
    upstream429Ratio: round(upstream429s / Math.max(1, stats.totalCalls), 5),
    amplification: round(stats.totalCalls / Math.max(1, logicalCalls)),
    makespanMs: Math.round(run.makespanMs),
    boundMs: Math.round(workload.boundMs),
    binding: workload.binding,
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
    clock: run.clock,
    maxInFlight: stats.maxInFlight,
    topTierDoneS: doneS(tiers[0]),
    lowestTierDoneS: doneS(tiers[tiers.length - 1]),
    cpuPerLogicalCallMs: round(run.cpuMs / Math.max(1, logicalCalls), 2),
    ...(run.emulatorCpuMs !== undefined
      ? { emulatorCpuPerUpstreamMs: round(run.emulatorCpuMs / Math.max(1, stats.totalCalls), 2) }
      : {}),
    emulatorInProcess: run.emulatorInProcess,
  };
}

/** The median of every numeric figure over runs (nearest rank: a value some run had); other fields from the first. */
export function medianFigures(runs: readonly PolicyFigures[]): PolicyFigures {
  const first = runs[0]!;
  const out: Record<string, unknown> = { ...first };
  for (const [k, v] of Object.entries(first)) {
    if (typeof v !== 'number') continue;
    out[k] = percentile(
      runs.map((r) => (r as unknown as Record<string, number>)[k]!),
      50,
    );
  }
  return out as unknown as PolicyFigures;
}
