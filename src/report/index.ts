/**
 * The run report: seed 000's success checks (and seed 003's placeholder count) computed from a run's
 * event log, as JSON and as a human summary.
 *
 * @example
 * ```ts
 * import { formatRunReport, loadRunReport } from './report/index.ts';
 * const report = await loadRunReport(store, runId);
 * console.log(formatRunReport(report).join('\n'));
 * ```
 */
export type {
  CallSummary,
  CheckOp,
  CheckUnit,
  ModelRate,
  ReportCheck,
  ReportWindow,
  RunReport,
  TierStats,
  TurnCounts,
} from './report-types.ts';
export {
  COOLING_DOWN_MESSAGE,
  SEED_THRESHOLDS,
  buildRunReport,
  type RunReportOptions,
} from './run-report.ts';
export { formatRunReport, formatValue, type FormatReportOptions } from './format-report.ts';
export { loadRunReport, type LoadRunReportOptions } from './load-run-report.ts';
export { eventsFromRecords } from './stored-events.ts';
export {
  formatUsageSummary,
  summarizeUsage,
  type TokenTotal,
  type UsageSummary,
} from './usage-summary.ts';
export { PLACEHOLDER_PATTERNS, answerText, isPlaceholderAnswer } from './placeholder-answer.ts';
export {
  maxInSlidingWindow,
  maxOverlap,
  maxPerClockSecond,
  percentile,
  type Interval,
} from './call-intervals.ts';
