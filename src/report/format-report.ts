import type { ReportCheck, RunReport, TierStats } from './report-types.ts';
import { formatUsageSummary } from './usage-summary.ts';
import { formatDuration, formatZonedDateTime } from '../clock/format-time.ts';

/**
 * Options of {@link formatRunReport}.
 *
 * @example
 * ```ts
 * formatRunReport(report, { timeZone: 'Asia/Seoul', details: false });
 * ```
 */
export interface FormatReportOptions {
  /** IANA zone the times are printed in. Default `UTC`. */
  readonly timeZone?: string;
  /** Print each check's one-line detail after its result. Default true. */
  readonly details?: boolean;
}

const OP_SYMBOL = { '<=': '≤', '>=': '≥', '=': '=' } as const;

/**
 * A check's value as a person reads it: rates in percent, waits in ms or s, counts as integers.
 *
 * @example
 * ```ts
 * formatValue(0.0213, 'ratio'); // '2.1 %'
 * formatValue(1500, 'ms'); // '1.5 s'
 * ```
 */
export function formatValue(value: number | null, unit: ReportCheck['unit']): string {
  if (value === null) return 'n/a';
  switch (unit) {
    case 'ratio':
      return `${(value * 100).toFixed(1)} %`;
    case 'ms':
      return value < 1000 ? `${Math.round(value)} ms` : `${(value / 1000).toFixed(1)} s`;
    case 'calls/h':
      return `${Math.round(value)}/h`;
    default:
      return String(Math.round(value));
  }
}

function threshold(c: ReportCheck): string {
  if (c.op === null || c.threshold === null) return '—';
  return `${OP_SYMBOL[c.op]} ${formatValue(c.threshold, c.unit)}`;
}

function result(c: ReportCheck): string {
  if (c.op === null) return 'info';
  if (c.pass === null) return 'n/a';
  return c.pass ? 'PASS' : 'FAIL';
}

function detail(c: ReportCheck, zone: string): string {
  const when = c.at !== undefined ? `at ${instant(c.at, zone)}` : '';
  return [c.detail ?? '', when].filter(Boolean).join(' ');
}

/** Left-aligned columns, two spaces apart; trailing spaces trimmed. */
function table(rows: readonly (readonly string[])[], indent = ''): string[] {
  const widths: number[] = [];
  for (const row of rows) {
    row.forEach((cell, i) => {
      widths[i] = Math.max(widths[i] ?? 0, cell.length);
    });
  }
  return rows.map((row) =>
    `${indent}${row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')}`.trimEnd(),
  );
}

/** An instant of the report in its zone, or `n/a` when the run did not reach it. */
const instant = (t: number | null, zone: string) => (t === null ? 'n/a' : formatZonedDateTime(t, zone));

const pct = (v: number | null) => formatValue(v, 'ratio');
const wait = (v: number | null) => formatValue(v, 'ms');

function tierRows(byTier: Readonly<Record<string, TierStats>>): string[][] {
  const head = [
    'tier',
    'turns',
    'answered',
    'fallback',
    'degraded',
    'failed',
    'no_agent',
    'failure',
    'success',
  ];
  const rows = Object.entries(byTier).map(([tier, s]) => [
    tier,
    String(s.total),
    String(s.answered),
    String(s.fallback),
    String(s.degraded),
    String(s.failed),
    String(s.noAgent),
    pct(s.failureRate),
    pct(s.successRate),
    `avg wait ${wait(s.avgWaitMs)}, p95 ${wait(s.p95WaitMs)}`,
  ]);
  return [[...head, 'wait'], ...rows];
}

/** One line: each round's span, its tail on fewer tokens than the limit, and tokens free while agents queued. */
function formatTokenTime({ limit, rounds }: NonNullable<RunReport['tokenTime']>): string {
  const d = (ms: number) => formatDuration(ms, 'compact');
  const each = rounds.map(
    (r) =>
      `round ${r.round} ${d(r.spanMs)} (tail ${d(r.tailMs)}, idle while queued ${d(r.idleWhileWaitingMs)})`,
  );
  return `tokens (${limit}): ${each.join('; ')}`;
}

/**
 * The human summary of a run report: a header (run, scenario, policy, status, window), the checks as
 * a table (check, value, threshold, PASS/FAIL), the turn counts, a per-tier table, the upstream calls
 * per model and a one-line verdict. One string per line, no trailing newline; plain text (no colour).
 *
 * @example
 * ```ts
 * for (const line of formatRunReport(report)) console.log(line);
 * // check                                  value  threshold  result
 * // max LLM calls in flight in any second  3      ≤ 3        PASS
 * ```
 */
export function formatRunReport(report: RunReport, options: FormatReportOptions = {}): string[] {
  const zone = options.timeZone ?? report.timeZone ?? 'UTC';
  const details = options.details ?? true;
  const t = report.turns;
  const lines: string[] = [];
  lines.push(
    `run ${report.runId}  scenario ${report.scenario}  policy ${report.policy}  status ${report.status}  ` +
      `rounds ${report.rounds.committed}/${report.rounds.total}`,
  );
  const { window: w } = report;
  const whole = w.peak.from === w.from && w.peak.to === w.to;
  lines.push(
    `window ${instant(w.from, zone)} → ${instant(w.to, zone)} ${zone} (${formatDuration(w.durationMs, 'compact')})` +
      (whole
        ? '; checks over the whole run'
        : `; checks over ${instant(w.peak.from, zone)} → ${instant(w.peak.to, zone)}`),
  );
  lines.push('');
  lines.push(
    ...table([
      ['check', 'value', 'threshold', 'result', ...(details ? [''] : [])],
      ...report.checks.map((c) => [
        c.id.startsWith('failure-rate:') ? `  ${c.name}` : c.name,
        formatValue(c.value, c.unit),
        threshold(c),
        result(c),
        ...(details ? [detail(c, zone)] : []),
      ]),
    ]),
  );
  lines.push('');
  lines.push(
    `turns ${t.total}: ${t.answered} answered, ${t.fallback} fallback, ${t.degraded} degraded (labelled), ` +
      `${t.failed} failed, ${t.noAgent} no_agent` +
      (t.cancelled > 0 ? `, ${t.cancelled} cancelled` : '') +
      `; placeholders ${t.placeholders ?? 'n/a'}`,
  );
  if (Object.keys(report.byTier).length > 0) lines.push(...table(tierRows(report.byTier), '  '));
  const c = report.calls;
  const models = Object.entries(report.callsPerModelPerHour)
    .map(([model, r]) => `${model} ${r.calls} (busiest hour ${r.peakHour})`)
    .join(', ');
  lines.push(
    `calls ${c.upstream} upstream${c.probes > 0 ? ` (${c.probes} breaker probes)` : ''}: ${c.ok} ok, ${c.faults} faults, ` +
      `${c.rateLimited} × 429 rate limit` +
      (c.creditExhausted > 0 ? `, ${c.creditExhausted} credit exhausted` : '') +
      `, max ${c.maxInFlight} in flight` +
      (models ? `; by model: ${models}` : ''),
  );
  const endpoints = Object.entries(c.byEndpoint)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([id, n]) => `${id} ${n}${c.probesByEndpoint[id] ? ` (${c.probesByEndpoint[id]} probes)` : ''}`);
  if (endpoints.length > 0) lines.push(`  by endpoint: ${endpoints.join(', ')}`);
  if (report.usage) lines.push(formatUsageSummary(report.usage));
  if (report.tokenTime?.rounds.length) lines.push(formatTokenTime(report.tokenTime));
  const failing = report.checks.filter((k) => k.pass === false);
  lines.push(
    report.allPassed === null
      ? 'result n/a — nothing to check'
      : failing.length === 0
        ? 'result PASS — every check passed'
        : `result FAIL — ${failing.map((k) => k.name).join('; ')}`,
  );
  if (report.byWorker) {
    lines.push('', 'turns by worker');
    for (const [worker, n] of Object.entries(report.byWorker)) lines.push(`  ${worker}  ${n}`);
  }
  if (report.emulator)
    lines.push(
      `emulator: ${report.emulator.totalCalls} calls from all workers, at most ${report.emulator.maxInFlight} in flight at once`,
    );
  return lines;
}
