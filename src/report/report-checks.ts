import { maxInSlidingWindow, percentile } from './call-intervals.ts';
import { HOUR_MS, inFlight } from './call-summary.ts';
import type { CallSummary, ReportCheck } from './report-types.ts';
import { type CallSample, COOLING_DOWN_MESSAGE, type TurnSample } from './report-samples.ts';
import type { ReportLimits, RunReportOptions } from './run-report-options.ts';
import { isFailed, mean, ratio } from './turn-stats.ts';

/** What the checks judge: the calls and turns that started inside the peak window. */
export interface PeakSamples {
  readonly peak: { readonly from: number; readonly to: number };
  /** Calls that started in the window. */
  readonly calls: readonly CallSample[];
  /** Every call of the run: in-flight counting also sees those still running when the window opened. */
  readonly allCalls: readonly CallSample[];
  readonly callSummary: CallSummary;
  /** "all candidate models are cooling down" lines logged in the window. */
  readonly coolingDown: number;
  /** LLM turns (no `no_agent`, no `cancelled`) that started in the window. */
  readonly llmTurns: readonly TurnSample[];
}

/** What the checks are judged against, resolved once by `buildRunReport`. */
export interface CheckSettings {
  readonly limits: ReportLimits;
  /** Where the in-flight threshold came from (said in its detail). */
  readonly inFlightSource: string;
  readonly analysisTiers: readonly string[];
  /** The stored turns; absent: answers not read. */
  readonly turns: RunReportOptions['turns'];
  /** Placeholder answers among `turns`; `null` without them. */
  readonly placeholders: number | null;
}

/**
 * Seed 000's checks and seed 003's, in the report's order: the calls at the peak, the turns' outcomes, then the
 * figures reported beside them.
 */
export function reportChecks(samples: PeakSamples, settings: CheckSettings): ReportCheck[] {
  return [
    ...callChecks(samples, settings),
    ...turnChecks(samples.llmTurns, settings),
    ...figureChecks(samples, settings),
  ];
}

/** Calls in flight at once, sonnet calls in the busiest hour, "all candidate models are cooling down" lines. */
function callChecks(samples: PeakSamples, { limits, inFlightSource }: CheckSettings): ReportCheck[] {
  const { calls, callSummary, coolingDown } = samples;
  const flight = inFlight(samples.allCalls, samples.peak);
  const sonnet = maxInSlidingWindow(
    calls.filter((c) => /sonnet/i.test(c.model)).map((c) => c.start),
    HOUR_MS,
  );
  const sonnetTotal = calls.filter((c) => /sonnet/i.test(c.model)).length;
  return [
    check({
      id: 'max-in-flight',
      name: 'max LLM calls in flight in any second',
      value: flight.max,
      unit: 'calls',
      op: '<=',
      threshold: limits.maxInFlight,
      detail:
        `threshold from ${inFlightSource}` +
        (callSummary.probes > 0 ? `; ${callSummary.probes} of the calls were breaker probes` : '') +
        (flight.at !== null ? '; first reached' : ''),
      ...(flight.at !== null ? { at: flight.at } : {}),
    }),
    check({
      id: 'sonnet-calls-per-hour',
      name: 'sonnet calls per hour at the peak',
      value: sonnet.count,
      unit: 'calls/h',
      op: '<=',
      threshold: limits.sonnetPerHour,
      ...(sonnet.from !== null
        ? { detail: `${sonnetTotal} sonnet calls in the window; busiest hour starts`, at: sonnet.from }
        : { detail: 'no sonnet calls in the window' }),
    }),
    check({
      id: 'cooling-down-messages',
      name: `"${COOLING_DOWN_MESSAGE}"`,
      value: coolingDown,
      unit: 'count',
      op: '=',
      threshold: limits.coolingDownMessages,
    }),
  ];
}

/** The failure rate (overall, then per tier, only reported) and the analysis agents' success rate. */
function turnChecks(
  llmTurns: readonly TurnSample[],
  { limits, analysisTiers }: CheckSettings,
): ReportCheck[] {
  const failed = llmTurns.filter(isFailed).length;
  const analysis = llmTurns.filter((t) => analysisTiers.includes(t.tier));
  const analysisOk = analysis.filter((t) => t.outcome === 'answered' || t.outcome === 'fallback').length;
  const tiers = [...new Set(llmTurns.map((t) => t.tier))];
  return [
    check({
      id: 'failure-rate',
      name: 'failure rate (failed ÷ LLM turns)',
      value: ratio(failed, llmTurns.length),
      unit: 'ratio',
      op: '<=',
      threshold: limits.failureRate,
      detail: `${failed} of ${llmTurns.length} LLM turns failed`,
    }),
    ...tiers.map((tier) => {
      const of = llmTurns.filter((t) => t.tier === tier);
      const f = of.filter(isFailed).length;
      return check({
        id: `failure-rate:${tier}`,
        name: `failure rate, tier ${tier}`,
        value: ratio(f, of.length),
        unit: 'ratio',
        op: null,
        threshold: null,
        detail: `${f} of ${of.length}`,
      });
    }),
    check({
      id: 'analysis-success-rate',
      name: `analysis agents' success rate (tier${analysisTiers.length > 1 ? 's' : ''} ${analysisTiers.join(', ')})`,
      value: ratio(analysisOk, analysis.length),
      unit: 'ratio',
      op: '>=',
      threshold: limits.analysisSuccessRate,
      detail:
        analysis.length > 0
          ? `${analysisOk} of ${analysis.length} LLM turns of tier${analysisTiers.length > 1 ? 's' : ''} ${analysisTiers.join(', ')} answered (normal or fallback)`
          : noAnalysisTurns(analysisTiers, tiers),
    }),
  ];
}

/** 429s received, the task waits (only reported), and the placeholder answers. */
function figureChecks(samples: PeakSamples, { limits, turns, placeholders }: CheckSettings): ReportCheck[] {
  const { callSummary } = samples;
  const waits = samples.llmTurns.map((t) => t.waitMs);
  return [
    check({
      id: 'rate-limited',
      name: '429 rate limits received',
      value: callSummary.rateLimited,
      unit: 'count',
      op: null,
      threshold: null,
      detail:
        `of ${callSummary.upstream} upstream calls` +
        (callSummary.creditExhausted > 0
          ? `; not counted: ${callSummary.creditExhausted} credit/quota exhaustion${callSummary.creditExhausted > 1 ? 's' : ''}`
          : ''),
    }),
    check({
      id: 'avg-wait',
      name: 'average task wait',
      value: mean(waits),
      unit: 'ms',
      op: null,
      threshold: null,
    }),
    check({
      id: 'p95-wait',
      name: 'p95 task wait',
      value: percentile(waits, 0.95),
      unit: 'ms',
      op: null,
      threshold: null,
    }),
    check({
      id: 'placeholders',
      name: 'placeholder answers',
      value: placeholders,
      unit: 'count',
      op: '=',
      threshold: limits.placeholders,
      detail: turns ? `of ${turns.length} stored turns` : 'answers not read',
    }),
  ];
}

function judge(value: number | null, op: ReportCheck['op'], threshold: number | null): boolean | null {
  if (value === null || op === null || threshold === null) return null;
  if (op === '<=') return value <= threshold;
  if (op === '>=') return value >= threshold;
  return value === threshold;
}

function check(c: Omit<ReportCheck, 'pass'>): ReportCheck {
  // A check whose threshold was switched off is only reported.
  const gated = c.threshold === null ? { ...c, op: null } : c;
  return { ...gated, pass: judge(gated.value, gated.op, gated.threshold) };
}

/** Why the analysis check has nothing to judge, and how to point it at the right tiers. */
function noAnalysisTurns(judged: readonly string[], present: readonly string[]): string {
  const tiers = present.length > 0 ? present.join(', ') : 'none';
  return (
    `no LLM turns in tier${judged.length > 1 ? 's' : ''} ${judged.join(', ')} (this run's tiers: ${tiers}); ` +
    "name the analysis tiers in the scenario's report.analysisTiers (e.g. analysisTiers: [" +
    `${present[0] ?? 'analysis'}]) or pass --analysis-tiers to breakwater report`
  );
}
