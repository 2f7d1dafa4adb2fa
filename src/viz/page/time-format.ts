import { formatZonedDateTime } from '../../clock/format-time.ts';

/*
 * How the page writes times: in the scenario's zone (when the run says it), in UTC, or since the run
 * started. The mode is the page's one choice (the time-mode select); every panel writes through here.
 */

/** How times are written: the scenario's zone (when the run says it), UTC, or since the run started. */
export const timeFmt: { mode: 'zone' | 'utc' | 'relative'; zone: string | null; origin: number | null } = {
  mode: 'utc',
  zone: null,
  origin: null,
};

function utcText(t: number): string {
  return `${new Date(t).toISOString().replace('T', ' ').slice(0, 23)}Z`;
}

function relativeText(t: number): string {
  const ms = t - (timeFmt.origin ?? t);
  const sign = ms < 0 ? '−' : '+';
  const a = Math.abs(ms);
  const hh = String(Math.floor(a / 3_600_000)).padStart(2, '0');
  const mm = String(Math.floor((a % 3_600_000) / 60_000)).padStart(2, '0');
  const ss = String(Math.floor((a % 60_000) / 1000)).padStart(2, '0');
  return `${sign}${hh}:${mm}:${ss}.${String(Math.floor(a % 1000)).padStart(3, '0')}`;
}

export function clockText(t: number | null): string {
  if (t === null || !Number.isFinite(t)) return '—';
  if (timeFmt.mode === 'relative') return `${relativeText(t)} since start`;
  if (timeFmt.mode === 'zone' && timeFmt.zone)
    return `${formatZonedDateTime(t, timeFmt.zone, { milliseconds: true })} ${timeFmt.zone}`;
  return utcText(t);
}

/** The time of day alone (lists, tooltips), in the chosen way. */
export function shortTime(t: number): string {
  if (timeFmt.mode === 'relative') return relativeText(t);
  if (timeFmt.mode === 'zone' && timeFmt.zone)
    return formatZonedDateTime(t, timeFmt.zone, { milliseconds: true }).slice(11);
  return utcText(t).slice(11, 23);
}

export function seconds(ms: number): string {
  return `${(Math.max(0, ms) / 1000).toFixed(1)} s`;
}
