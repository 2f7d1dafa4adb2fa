import type { RunRecord } from '../store/store-types.ts';
import { num, record, str } from './report-fields.ts';

/**
 * Seed 000's thresholds ("How success is checked").
 *
 * @example
 * ```ts
 * SEED_THRESHOLDS.maxInFlight; // 3
 * ```
 */
export const SEED_THRESHOLDS = Object.freeze({
  /** LLM calls in flight at once. */
  maxInFlight: 3,
  /** Sonnet calls in any hour of the peak. */
  sonnetPerHour: 20,
  /** "all candidate models are cooling down" lines. */
  coolingDownMessages: 0,
  /** failed ÷ LLM turns. */
  failureRate: 0.02,
  /** (answered + fallback) ÷ analysis turns. */
  analysisSuccessRate: 0.95,
  /** Placeholder answers (seed 003). */
  placeholders: 0,
});

/**
 * Thresholds to use instead of {@link SEED_THRESHOLDS}, by name; `null` turns a check into a reported
 * number without PASS/FAIL (e.g. `sonnetPerHour` for a scenario where sonnet's quota is not the question).
 *
 * @example
 * ```ts
 * const thresholds: ReportThresholds = { sonnetPerHour: null, failureRate: 0.05 };
 * ```
 */
export type ReportThresholds = { readonly [K in keyof typeof SEED_THRESHOLDS]?: number | null };

/**
 * Options of `buildRunReport`. Each falls back to the same field under `run.config.report`
 * (so a scenario can store its own peak), then to the default.
 *
 * @example
 * ```ts
 * const options: RunReportOptions = { peak: { from: Date.parse('2026-08-17T07:00+09:00'), to: Date.parse('2026-08-17T08:30+09:00') } };
 * ```
 */
export interface RunReportOptions {
  /** Epoch-ms window (run clock) the checks look at. Default: the whole run. */
  readonly peak?: { readonly from: number; readonly to: number };
  /** Tiers whose agents count as analysis agents for the success-rate check. Default `['analysis']`. */
  readonly analysisTiers?: readonly string[];
  /**
   * The stored turns (`store.listTurns`, or the `TurnInput`s of `commitRound`): their answer texts give
   * the placeholder count, their usage the token summary. Default: none (the count is `null`, no summary).
   */
  readonly turns?: readonly {
    readonly answer?: unknown;
    readonly outcome: string;
    readonly usage?: unknown;
  }[];
  /** The policy name to print. Default: `run.config.policy`, else `breakwater`. */
  readonly policy?: string;
  /** Thresholds replacing the seed's, per check (merged over `run.config.report.thresholds`). Default {@link SEED_THRESHOLDS}. */
  readonly thresholds?: ReportThresholds;
  /**
   * The runtime's `concurrency.limit`: the in-flight check's threshold when no threshold names
   * `maxInFlight` (a run told to keep 4 calls in flight passes at 4). Default:
   * `run.config.report.concurrencyLimit` (what `runScenario` stores), else seed 000's 3.
   */
  readonly concurrencyLimit?: number;
}

/** The report's settings stored with a run (`run.config.report`), each read only when well formed. */
export interface ReportDefaults {
  readonly policy?: string;
  readonly timeZone?: string;
  readonly peak?: RunReportOptions['peak'];
  readonly tiers?: string[];
  readonly thresholds: Record<string, number | null>;
  readonly concurrencyLimit?: number;
}

/** What the options fall back to: the run's stored policy and report settings. */
export function configDefaults(run: RunRecord): ReportDefaults {
  const config = record(run.config);
  const report = record(config.report);
  const peak = record(report.peak);
  const from = num(peak.from);
  const to = num(peak.to);
  const tiers = Array.isArray(report.analysisTiers)
    ? report.analysisTiers.filter((t): t is string => typeof t === 'string')
    : undefined;
  const thresholds: Record<string, number | null> = {};
  for (const [name, value] of Object.entries(record(report.thresholds))) {
    if (!(name in SEED_THRESHOLDS)) continue;
    if (value === null || num(value) !== undefined) thresholds[name] = value as number | null;
  }
  const concurrencyLimit = num(report.concurrencyLimit);
  return {
    ...(concurrencyLimit !== undefined && concurrencyLimit > 0 ? { concurrencyLimit } : {}),
    ...(str(config.policy) ? { policy: str(config.policy) } : {}),
    ...(str(report.timeZone) ? { timeZone: str(report.timeZone) } : {}),
    ...(from !== undefined && to !== undefined ? { peak: { from, to } } : {}),
    ...(tiers && tiers.length > 0 ? { tiers } : {}),
    thresholds,
  };
}

/** Every check's threshold, resolved (`null`: only reported). */
export type ReportLimits = { readonly [K in keyof typeof SEED_THRESHOLDS]: number | null };

/**
 * The thresholds the checks use: the seed's, under the run's own concurrency limit, under the scenario's, under
 * the options'; and where the in-flight check's came from (said in its detail).
 */
export function reportLimits(
  defaults: ReportDefaults,
  options: RunReportOptions,
): { readonly limits: ReportLimits; readonly inFlightSource: string } {
  const given = Object.entries(options.thresholds ?? {}).filter(([, v]) => v !== undefined);
  const concurrencyLimit = options.concurrencyLimit ?? defaults.concurrencyLimit;
  const limits = {
    ...SEED_THRESHOLDS,
    // The run did what it was told when it kept its own limit: that is the default bar, not the seed's 3.
    ...(concurrencyLimit !== undefined ? { maxInFlight: concurrencyLimit } : {}),
    ...defaults.thresholds,
    ...Object.fromEntries(given),
  } as ReportLimits;
  const inFlightSource = given.some(([k]) => k === 'maxInFlight')
    ? 'the report options'
    : 'maxInFlight' in defaults.thresholds
      ? "the scenario's report.thresholds"
      : concurrencyLimit !== undefined
        ? 'the configured concurrency.limit'
        : "seed 000's limit (concurrency.limit unknown)";
  return { limits, inFlightSource };
}
