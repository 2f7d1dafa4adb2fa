/**
 * Wall-clock time in an IANA zone, with nothing but `Intl`: a scheduled scenario reads its window and
 * names its firings (`job@07:30`) in the schedule's zone, whatever the machine's own zone is.
 */

/** Calendar fields of an instant as seen in a zone. */
export interface ZonedParts {
  readonly year: number;
  /** 1–12. */
  readonly month: number;
  readonly day: number;
  readonly hour: number;
  readonly minute: number;
  readonly second: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/**
 * True when `timeZone` is an IANA zone name this runtime knows (`Asia/Seoul`, `UTC`).
 *
 * @example
 * ```ts
 * isTimeZone('Asia/Seoul'); // true
 * isTimeZone('Asia/Soul'); // false
 * ```
 */
export function isTimeZone(timeZone: string): boolean {
  try {
    formatter(timeZone);
    return true;
  } catch {
    return false;
  }
}

/**
 * The wall-clock fields of `epochMs` in `timeZone`.
 *
 * @example
 * ```ts
 * zonedParts(Date.parse('2026-08-16T22:30:00Z'), 'Asia/Seoul'); // { year: 2026, month: 8, day: 17, hour: 7, minute: 30, second: 0 }
 * ```
 */
export function zonedParts(epochMs: number, timeZone: string): ZonedParts {
  const out: Record<string, number> = {};
  for (const p of formatter(timeZone).formatToParts(new Date(epochMs))) {
    if (p.type !== 'literal') out[p.type] = Number(p.value);
  }
  return {
    year: out.year ?? 0,
    month: out.month ?? 1,
    day: out.day ?? 1,
    hour: out.hour ?? 0,
    minute: out.minute ?? 0,
    second: out.second ?? 0,
  };
}

const pad = (n: number) => String(n).padStart(2, '0');

/**
 * `HH:MM` of an instant in a zone (`HH:MM:SS` when the seconds are not zero).
 *
 * @example
 * ```ts
 * formatClock(Date.parse('2026-08-17T07:30:00+09:00'), 'Asia/Seoul'); // '07:30'
 * ```
 */
export function formatClock(epochMs: number, timeZone: string): string {
  const p = zonedParts(epochMs, timeZone);
  return `${pad(p.hour)}:${pad(p.minute)}${p.second !== 0 ? `:${pad(p.second)}` : ''}`;
}

/**
 * `YYYY-MM-DD` of an instant in a zone.
 *
 * @example
 * ```ts
 * formatDate(Date.parse('2026-08-16T22:30:00Z'), 'Asia/Seoul'); // '2026-08-17'
 * ```
 */
export function formatDate(epochMs: number, timeZone: string): string {
  const p = zonedParts(epochMs, timeZone);
  return `${p.year}-${pad(p.month)}-${pad(p.day)}`;
}

/** Offset of the zone from UTC at an instant, ms (Seoul: +9 h). */
function offsetAt(epochMs: number, timeZone: string): number {
  const p = zonedParts(epochMs, timeZone);
  const asUtc = Date.UTC(p.year, p.month - 1, p.day, p.hour, p.minute, p.second);
  return asUtc - Math.floor(epochMs / 1000) * 1000;
}

/**
 * The instant at which the wall clock of `timeZone` shows the given fields. A time skipped by a DST
 * change resolves to the instant one offset later (as most schedulers do).
 *
 * @example
 * ```ts
 * zonedTimeToEpoch({ year: 2026, month: 8, day: 17, hour: 6, minute: 0, second: 0 }, 'Asia/Seoul');
 * // Date.parse('2026-08-17T06:00:00+09:00')
 * ```
 */
export function zonedTimeToEpoch(parts: ZonedParts, timeZone: string): number {
  const guess = Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second);
  const first = guess - offsetAt(guess, timeZone);
  const second = guess - offsetAt(first, timeZone);
  return second;
}

const TIME_OF_DAY = /^(\d{1,2}):(\d{2})$/;
const OFFSET_SUFFIX = /(Z|[+-]\d{2}:?\d{2})$/i;

/**
 * True for `HH:MM` (a time of day without a date).
 *
 * @example
 * ```ts
 * isTimeOfDay('06:00'); // true
 * isTimeOfDay('2026-08-17T06:00:00+09:00'); // false
 * ```
 */
export function isTimeOfDay(text: string): boolean {
  const m = TIME_OF_DAY.exec(text);
  return m !== null && Number(m[1]) < 24 && Number(m[2]) < 60;
}

/**
 * True for an ISO 8601 date-time that carries its own offset (`…+09:00` or `…Z`) and parses.
 *
 * @example
 * ```ts
 * isAbsoluteInstant('2026-08-17T06:00:00+09:00'); // true
 * isAbsoluteInstant('2026-08-17T06:00:00'); // false: local time differs from machine to machine
 * ```
 */
export function isAbsoluteInstant(text: string): boolean {
  return /^\d{4}-\d{2}-\d{2}T/.test(text) && OFFSET_SUFFIX.test(text) && Number.isFinite(Date.parse(text));
}

/**
 * Reads a schedule bound: an ISO 8601 date-time with offset as it is, or `HH:MM` on the calendar day
 * that `originMs` falls on in `timeZone`.
 *
 * @example
 * ```ts
 * resolveInstant('06:00', 'Asia/Seoul', Date.parse('2026-08-17T05:00:00+09:00')); // 06:00 KST that day
 * ```
 */
export function resolveInstant(text: string, timeZone: string, originMs: number): number {
  const m = TIME_OF_DAY.exec(text);
  if (!m) return Date.parse(text);
  const day = zonedParts(originMs, timeZone);
  return zonedTimeToEpoch({ ...day, hour: Number(m[1]), minute: Number(m[2]), second: 0 }, timeZone);
}
