import { zonedParts } from './zoned-time.ts';

/*
 * The one owner of time as text: an instant in a zone, and a duration in each of the forms the product prints.
 * The forms differ on purpose (a report's column, a label that must stay short, a sentence, a page), and they live
 * side by side here so that a new place picks one instead of writing a fifth.
 */

const pad = (n: number) => String(n).padStart(2, '0');

/** Options of {@link formatZonedDateTime}. */
export interface ZonedDateTimeOptions {
  /** Adds `.mmm` (the visualizer's instants). @default false */
  readonly milliseconds?: boolean;
}

/**
 * An instant as `YYYY-MM-DD HH:MM:SS` in an IANA zone (the report's times, `breakwater runs`' created column;
 * with `.mmm`, the visualizer's).
 *
 * @example
 * ```ts
 * formatZonedDateTime(Date.parse('2026-08-16T22:30:00Z'), 'Asia/Seoul'); // '2026-08-17 07:30:00'
 * ```
 */
export function formatZonedDateTime(
  epochMs: number,
  timeZone: string,
  options: ZonedDateTimeOptions = {},
): string {
  const p = zonedParts(epochMs, timeZone);
  const text = `${p.year}-${pad(p.month)}-${pad(p.day)} ${pad(p.hour)}:${pad(p.minute)}:${pad(p.second)}`;
  if (!options.milliseconds) return text;
  return `${text}.${String(((Math.floor(epochMs) % 1000) + 1000) % 1000).padStart(3, '0')}`;
}

/**
 * How a duration is written:
 * - `compact`: whole units, no spaces inside a unit — `42s`, `3m 5s`, `2h 7m` (the report's columns);
 * - `short`: at most four characters of number, for a label that counts down — `850ms`, `4.2s`, `38s`, `12m`, `2h`;
 * - `spaced`: `42 s`, `3 min 5 s` (the visualizer page);
 * - `exact`: the largest unit it is a whole number of — `2 h`, `90 s`, `1500 ms` (a configured value in a sentence).
 */
export type DurationStyle = 'compact' | 'short' | 'spaced' | 'exact';

/**
 * A duration in ms as text, in the given style (see {@link DurationStyle}).
 *
 * @example
 * ```ts
 * formatDuration(185_000, 'compact'); // '3m 5s'
 * formatDuration(4_200, 'short');     // '4.2s'
 * formatDuration(185_000, 'spaced');  // '3 min 5 s'
 * formatDuration(7_200_000, 'exact'); // '2 h'
 * ```
 */
export function formatDuration(ms: number, style: DurationStyle): string {
  switch (style) {
    case 'compact': {
      const s = Math.round(ms / 1000);
      if (s < 60) return `${s}s`;
      const m = Math.floor(s / 60);
      if (m < 60) return `${m}m ${s % 60}s`;
      return `${Math.floor(m / 60)}h ${m % 60}m`;
    }
    case 'short':
      if (ms < 1_000) return `${Math.max(0, Math.round(ms))}ms`;
      if (ms < 10_000) return `${(ms / 1000).toFixed(1)}s`;
      if (ms < 120_000) return `${Math.round(ms / 1000)}s`;
      if (ms < 7_200_000) return `${Math.round(ms / 60_000)}m`;
      return `${Math.round(ms / 3_600_000)}h`;
    case 'spaced': {
      if (!(ms >= 0)) return '—';
      const sec = Math.round(ms / 1000);
      return sec >= 60 ? `${Math.floor(sec / 60)} min ${sec % 60} s` : `${sec} s`;
    }
    case 'exact':
      if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
      if (ms % 60_000 === 0) return `${ms / 60_000} min`;
      if (ms % 1_000 === 0) return `${ms / 1_000} s`;
      return `${ms} ms`;
  }
}
