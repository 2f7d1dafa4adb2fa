import { roundTokenTime } from './round-token-time.ts';
import type { RuntimeEvent } from '../core/runtime-event.ts';
import type { RunRecord } from '../store/store-types.ts';
import { modelRates, summarizeCalls } from './call-summary.ts';
import { isPlaceholderAnswer } from './placeholder-answer.ts';
import { reportChecks } from './report-checks.ts';
import type { ReportCheck, RunReport } from './report-types.ts';
import { collectSamples } from './report-samples.ts';
import { configDefaults, reportLimits, type RunReportOptions } from './run-report-options.ts';
import { countTurns, isLlmTurn, statsByTier } from './turn-stats.ts';
import { summarizeUsage } from './usage-summary.ts';

export { COOLING_DOWN_MESSAGE } from './report-samples.ts';
export { type ReportThresholds, type RunReportOptions, SEED_THRESHOLDS } from './run-report-options.ts';

/**
 * Builds the report of a run from its event log: seed 000's checks (at most 3 LLM calls in flight,
 * sonnet ≤ 20 calls per hour at the peak, no "all candidate models are cooling down", failure rate
 * ≤ 2 % overall and per tier, analysis agents' success ≥ 95 %, 429s received, average and p95 task
 * wait) and seed 003's (no placeholder answers), each with its threshold and pass/fail; plus turn
 * counts, per-tier statistics and per-model call rates. Pure: no I/O, no clock.
 *
 * Calls are `call.attempt` events (memoized results are not calls); a call is in flight from its
 * `startedAt` to its `at`. Turns are `turn.completed` events, one per turn id (the last one wins, so a
 * resumed run does not count a turn twice). The checks look at calls and turns that started inside
 * the peak window; the turn counts and `byTier` cover the whole run. Placeholders need the stored
 * answers (`options.turns`); without them their count is `null`.
 *
 * @param run the stored run (`store.getRun`)
 * @param events its events in log order (`eventsFromRecords(await store.readEvents(runId))`, or the
 *   runtime's `onEvent` feed)
 * @example
 * ```ts
 * const report = buildRunReport(run, eventsFromRecords(await store.readEvents(run.runId)), {
 *   turns: await store.listTurns(run.runId),
 * });
 * for (const c of report.checks) console.log(c.name, c.value, c.pass);
 * ```
 */
export function buildRunReport(
  run: RunRecord,
  events: readonly RuntimeEvent[],
  options: RunReportOptions = {},
): RunReport {
  const defaults = configDefaults(run);
  const { limits, inFlightSource } = reportLimits(defaults, options);
  const analysisTiers = options.analysisTiers ?? defaults.tiers ?? ['analysis'];
  const collected = collectSamples(events);
  const peakOption = options.peak ?? defaults.peak;
  const peak = {
    from: peakOption?.from ?? Number.NEGATIVE_INFINITY,
    to: peakOption?.to ?? Number.POSITIVE_INFINITY,
  };
  const inPeak = (t: number) => t >= peak.from && t <= peak.to;

  const calls = collected.calls.filter((c) => inPeak(c.start));
  const callSummary = summarizeCalls(calls, collected.calls, peak);
  const placeholders = options.turns
    ? options.turns.filter((t) => isPlaceholderAnswer(t.answer, t.outcome)).length
    : null;
  const checks: ReportCheck[] = reportChecks(
    {
      peak,
      calls,
      allCalls: collected.calls,
      callSummary,
      coolingDown: collected.coolingDown.filter(inPeak).length,
      llmTurns: collected.turns.filter((t) => inPeak(t.startedAt)).filter(isLlmTurn),
    },
    { limits, inFlightSource, analysisTiers, turns: options.turns, placeholders },
  );
  const judged = checks.filter((c) => c.pass !== null);
  const allPassed = judged.length === 0 ? null : judged.every((c) => c.pass === true);

  return Object.freeze({
    runId: run.runId,
    scenario: run.scenario,
    status: run.status,
    policy: options.policy ?? defaults.policy ?? 'breakwater',
    ...(defaults.timeZone ? { timeZone: defaults.timeZone } : {}),
    rounds: { committed: run.currentRound, total: run.totalRounds },
    window: {
      ...collected.window,
      peak: {
        from: peakOption?.from ?? collected.window.from,
        to: peakOption?.to ?? collected.window.to,
      },
    },
    turns: { ...countTurns(collected.turns), placeholders },
    checks,
    allPassed,
    byTier: statsByTier(collected.turns),
    callsPerModelPerHour: modelRates(calls),
    calls: callSummary,
    agents: collected.agents,
    ...(options.turns ? { usage: summarizeUsage(options.turns) } : {}),
    ...(limits.maxInFlight !== null
      ? { tokenTime: { limit: limits.maxInFlight, rounds: roundTokenTime(events, limits.maxInFlight) } }
      : {}),
  });
}
