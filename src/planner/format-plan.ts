import { formatClock, formatDate } from '../clock/zoned-time.ts';
import type { Breach, DemandSummary, PlanMove, PlanResult } from './plan-types.ts';

/** Most jobs named on the peak's line before "and N more". */
const PEAK_JOBS_SHOWN = 25;

const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

function breachLine(b: Breach, zone: string): string {
  const at = formatClock(b.at, zone);
  switch (b.kind) {
    case 'rpm':
      return `${b.target}: ${b.demand} calls in the minute ${at} > ${b.limit} RPM (over by ${b.over}; ${plural(b.count, 'minute')} over)`;
    case 'tpm':
      return `${b.target}: ${b.demand} tokens in the minute ${at} > ${b.limit} TPM (over by ${b.over}; ${plural(b.count, 'minute')} over)`;
    case 'concurrency':
      return `concurrency tokens: ${b.demand} calls in flight on average in the minute ${at} > ${b.limit} (over by ${b.over})`;
    case 'budget':
      return `${b.target}: ${b.demand} in the 60 minutes from ${at} > ${b.limit} (over by ${b.over}; ${plural(b.count, '60-minute span')} over)`;
  }
}

function demandLines(label: string, d: DemandSummary, zone: string): string[] {
  const lines = [`${label}: ${d.fits ? 'FITS every limit' : 'DOES NOT FIT'}`];
  if (d.peak) {
    lines.push(`  peak ${d.peak.label}: ${d.peak.calls} LLM calls from ${plural(d.peak.jobs.length, 'job')}`);
    for (const b of d.peak.budgets)
      lines.push(`    breaks ${b.name}: ${b.calls} > ${b.limit} (over by ${b.calls - b.limit})`);
    const shown = d.peak.jobs.slice(0, PEAK_JOBS_SHOWN).map((j) => `${j.name} ${j.calls}`);
    const more = d.peak.jobs.length - shown.length;
    lines.push(`    jobs: ${shown.join(', ')}${more > 0 ? `, and ${more} more` : ''}`);
  }
  if (d.breaches.length > 0) {
    lines.push('  over a limit:');
    for (const b of d.breaches) lines.push(`    ${breachLine(b, zone)}`);
  }
  const hours = d.hours.map((h) => {
    const budgets = Object.entries(h.byBudget).map(([n, c]) => `${n.split(' ')[0]} ${c}`);
    return `${h.label} ${h.calls}${budgets.length ? ` (${budgets.join(', ')})` : ''}`;
  });
  lines.push(`  LLM calls per hour: ${hours.join(' | ')}`);
  for (const b of d.budgets)
    lines.push(`  ${b.name}: at most ${b.peakHour} in any 60 minutes (limit ${b.limit})`);
  lines.push(`  predicted fallbacks: ${d.spilled} of ${d.calls} calls off their chain's first endpoint`);
  return lines;
}

/**
 * One move as a line of the `schedule.jobs` diff.
 *
 * @example
 * ```ts
 * formatMove({ job: 'kpi', kind: 'chain', from: 'premium', to: 'light' }); // '~ kpi  chain: premium → light'
 * ```
 */
export function formatMove(m: PlanMove): string {
  if (m.kind === 'shift')
    return `~ ${m.job}  cron: "${m.from}" → "${m.to}"  (${m.minutes! > 0 ? '+' : ''}${m.minutes} min)`;
  if (m.kind === 'chain') return `~ ${m.job}  chain: ${m.from} → ${m.to}`;
  return `~ ${m.job}  noAgent: true  (runs as plain code, no LLM)`;
}

/**
 * The plan as a person reads it: the window and limits, the schedule before (the peak, the jobs in it,
 * every limit it breaks, calls per hour), the proposal as a diff of `schedule.jobs`, and the schedule
 * after it.
 *
 * @example
 * ```ts
 * for (const line of formatPlan(planSchedule(spec), 'morning-peak-before-fixes')) console.log(line);
 * ```
 */
export function formatPlan(plan: PlanResult, name: string): string[] {
  const zone = plan.window.timezone;
  const lines = [
    `plan ${name}: ${formatDate(plan.window.from, zone)} ${formatClock(plan.window.from, zone)}–${formatClock(plan.window.to, zone)} ${zone}, ${plural(plan.jobs.length, 'job')}, ${plan.before.calls} LLM calls predicted`,
  ];
  const limits = plan.before.endpoints
    .filter((e) => e.rpm !== null || e.tpm !== null)
    .map(
      (e) =>
        `${e.id} ${[e.rpm !== null ? `${e.rpm} RPM` : '', e.tpm !== null ? `${e.tpm} TPM` : ''].filter(Boolean).join(' ')}`,
    );
  if (plan.before.concurrency.limit !== null)
    limits.push(`${plan.before.concurrency.limit} concurrency tokens`);
  for (const b of plan.before.budgets) limits.push(`${b.name} ≤ ${b.limit}`);
  lines.push(`limits: ${limits.join('; ') || 'none declared'}`, '');
  lines.push(...demandLines('before', plan.before, zone), '');
  const p = plan.proposal;
  if (p.moves.length === 0) {
    lines.push(
      plan.before.fits
        ? 'proposal: nothing to move; the schedule fits'
        : `proposal: none found. ${p.note ?? ''}`.trim(),
    );
    return lines;
  }
  lines.push(
    `proposal: ${plural(p.moves.length, 'move')} to schedule.jobs${p.fits ? ', and the schedule fits' : `, still over a limit. ${p.note ?? ''}`}`.trim(),
  );
  for (const m of p.moves) lines.push(`  ${formatMove(m)}`);
  lines.push('', ...demandLines('after', plan.after, zone));
  return lines;
}
