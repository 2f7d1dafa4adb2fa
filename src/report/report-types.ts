import type { RoundTokenTime } from './round-token-time.ts';
import type { AgentInfo } from '../core/runtime-event.ts';
import type { UsageSummary } from './usage-summary.ts';

/**
 * Plain-data shapes of the run report: what `breakwater report --json` prints and what
 * {@link buildRunReport} returns. Times are epoch ms on the run's clock (simulated time for a
 * time-scaled run); rates are fractions (0.02 = 2 %).
 */

/**
 * What a check's value counts.
 *
 * @example
 * ```ts
 * const unit: CheckUnit = 'ratio'; // 0.02 prints as "2.0 %"
 * ```
 */
export type CheckUnit = 'calls' | 'calls/h' | 'count' | 'ratio' | 'ms';

/**
 * How a check's value is compared with its threshold.
 *
 * @example
 * ```ts
 * const op: CheckOp = '<='; // value ≤ threshold passes
 * ```
 */
export type CheckOp = '<=' | '>=' | '=';

/**
 * One of seed 000's success checks, computed from the event log.
 *
 * @example
 * ```ts
 * const failing = report.checks.filter((c: ReportCheck) => c.pass === false).map((c) => c.name);
 * ```
 */
export interface ReportCheck {
  /**
   * Stable id for machines: `max-in-flight`, `sonnet-calls-per-hour`, `cooling-down-messages`,
   * `failure-rate`, `failure-rate:<tier>`, `analysis-success-rate`, `rate-limited`, `avg-wait`,
   * `p95-wait`, `placeholders`.
   */
  readonly id: string;
  /** What a person reads in the table. */
  readonly name: string;
  /** The measured value; `null` when there was nothing to measure (no LLM turns, answers not given). */
  readonly value: number | null;
  readonly unit: CheckUnit;
  /** `null` for a check that is only reported (no threshold in the seed). */
  readonly op: CheckOp | null;
  readonly threshold: number | null;
  /** `true`/`false` against the threshold; `null` when only reported or when `value` is `null`. */
  readonly pass: boolean | null;
  /** One line of context (out of how many, where the maximum happened). */
  readonly detail?: string;
  /** When the value was reached: the maximum's first instant, the busiest hour's start (run clock). */
  readonly at?: number;
}

/**
 * How the turns of a run ended.
 *
 * @example
 * ```ts
 * const { total, answered, fallback, degraded } = report.turns;
 * ```
 */
export interface TurnCounts {
  readonly total: number;
  readonly answered: number;
  readonly fallback: number;
  /** Answered by the degraded layer, labelled as such. */
  readonly degraded: number;
  readonly failed: number;
  /** Aborted by the caller (a stopped run); neither success nor failure. */
  readonly cancelled: number;
  /** Plain-code jobs (`no_agent`), no LLM involved. */
  readonly noAgent: number;
  /** Answers that are the seed's placeholder or empty while not failed; `null` when the answers were not given. */
  readonly placeholders: number | null;
}

/**
 * The turns of one tier.
 *
 * @example
 * ```ts
 * report.byTier.analysis?.successRate; // 0.97
 * ```
 */
export interface TierStats extends Omit<TurnCounts, 'placeholders'> {
  /** failed ÷ LLM turns (answered + fallback + degraded + failed); `null` without LLM turns. */
  readonly failureRate: number | null;
  /** (answered + fallback) ÷ LLM turns; `null` without LLM turns. */
  readonly successRate: number | null;
  /** Mean `waitMs` of its LLM turns; `null` without LLM turns. */
  readonly avgWaitMs: number | null;
  /** 95th percentile (nearest rank) of `waitMs`; `null` without LLM turns. */
  readonly p95WaitMs: number | null;
}

/**
 * Upstream calls to one model inside the checks' window.
 *
 * @example
 * ```ts
 * report.callsPerModelPerHour['claude-sonnet-4-6']?.peakHour; // 18
 * ```
 */
export interface ModelRate {
  readonly provider: string;
  /** Upstream attempts (answered or not) that started inside the window. */
  readonly calls: number;
  readonly ok: number;
  /** The most attempts that started in any 60-minute span of the window (a shorter window counts what it holds). */
  readonly peakHour: number;
  /** Start of that span; `null` without calls. */
  readonly peakHourFrom: number | null;
}

/**
 * Upstream calls inside the checks' window (memoized results are not calls; breaker probes are).
 *
 * @example
 * ```ts
 * `${report.calls.rateLimited} of ${report.calls.upstream} calls (${report.calls.probes} probes) got a 429 rate limit`;
 * ```
 */
export interface CallSummary {
  /** Every request that went upstream: the agents' attempts and the breakers' HALF-OPEN probes. */
  readonly upstream: number;
  /** Of `upstream`, the breakers' HALF-OPEN probes (`call.attempt` with `probe: true`). */
  readonly probes: number;
  readonly ok: number;
  readonly faults: number;
  /**
   * 429s that were rate limits (a `rate_limited` fault, or an unclassified 429): the "429s received"
   * of seed 000. A credit or quota 429 is counted in `creditExhausted` instead.
   */
  readonly rateLimited: number;
  /** `credit_exhausted` faults (spend caps, `insufficient_quota`, a Gemini per-day quota), whatever their status. */
  readonly creditExhausted: number;
  readonly byFaultKind: Readonly<Record<string, number>>;
  /** Upstream calls per endpoint id, probes included. */
  readonly byEndpoint: Readonly<Record<string, number>>;
  /** The probes among them, per endpoint id (endpoints without probes are absent). */
  readonly probesByEndpoint: Readonly<Record<string, number>>;
  /** The most calls in flight at one instant (`startedAt`..`at` intervals). */
  readonly maxInFlight: number;
  /** The most calls started inside one clock second (what seed 000 counted from its log lines). */
  readonly maxStartedInOneSecond: number;
}

/**
 * The time span of a run and of its checks.
 *
 * @example
 * ```ts
 * new Date(report.window.peak.from ?? 0).toISOString();
 * ```
 */
export interface ReportWindow {
  /** First event (`run.started` when there is one); `null` for a run without events. */
  readonly from: number | null;
  /** `run.finished`, else the last event; `null` for a run without events. */
  readonly to: number | null;
  readonly durationMs: number;
  /** The window the checks look at: the `peak` option, else the whole run. */
  readonly peak: { readonly from: number | null; readonly to: number | null };
}

/**
 * The report of one run: seed 000's checks with thresholds and PASS/FAIL, turn counts, per-tier
 * statistics and per-model call rates. Plain JSON (what `breakwater report --json` prints).
 *
 * @example
 * ```ts
 * const report = buildRunReport(run, events, { turns });
 * if (report.allPassed === false) process.exitCode = 2;
 * ```
 */
export interface RunReport {
  readonly runId: string;
  readonly scenario: string;
  readonly status: string;
  /** `breakwater` or `status-quo` (from the run's config), else `breakwater`. */
  readonly policy: string;
  /** IANA zone the scenario reads its times in (`run.config.report.timeZone`), for printing. Absent: UTC. */
  readonly timeZone?: string;
  readonly rounds: { readonly committed: number; readonly total: number };
  readonly window: ReportWindow;
  /** Every turn of the run (deduplicated by turn id). */
  readonly turns: TurnCounts;
  readonly checks: readonly ReportCheck[];
  /** `false` when a check with a threshold failed; `true` when every such check passed; `null` when none could be judged. */
  readonly allPassed: boolean | null;
  /** Every turn of the run, by tier. */
  readonly byTier: Readonly<Record<string, TierStats>>;
  /** By model name, inside the checks' window. */
  readonly callsPerModelPerHour: Readonly<Record<string, ModelRate>>;
  readonly calls: CallSummary;
  /** The agents `run.started` announced. */
  readonly agents: readonly AgentInfo[];
  /** Committed turns per worker process, for a run spread over workers (`breakwater run --workers`). Absent otherwise. */
  readonly byWorker?: Readonly<Record<string, number>>;
  /**
   * The emulator's own record of upstream calls, when `breakwater run --workers` started it: every worker's
   * calls together. Absent otherwise.
   */
  readonly emulator?: { readonly totalCalls: number; readonly maxInFlight: number };
  /**
   * Token usage of the stored turns: what the providers reported, and apart from it the turns whose usage nobody
   * reported with breakwater's estimate of them. Absent when the turns were not given.
   */
  readonly usage?: UsageSummary;
  /**
   * How each committed round used the tokens (`limit`: the concurrency limit the checks judge by): its span, the time
   * tokens were free while agents were queued for one, and its tail on fewer tokens than the limit. Absent from
   * reports made before it was added.
   */
  readonly tokenTime?: { readonly limit: number; readonly rounds: readonly RoundTokenTime[] };
}
