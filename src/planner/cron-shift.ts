/**
 * Moves a cron expression by whole minutes, as one cron expression (`30 7 * * 1-5` + 25 min →
 * `55 7 * * 1-5`; `*\/2 * * * *` + 1 min → `1-59/2 * * * *`). Only the minute and hour fields are
 * rewritten; a move that would need a second expression or would cross midnight on a job restricted to
 * some days is refused (`undefined`), so a written cron never fires where the original did not mean to.
 * The planner still checks each rewrite by expanding it (see `firing-expansion.ts`).
 */

interface FieldRange {
  readonly min: number;
  readonly max: number;
}

const MINUTE: FieldRange = { min: 0, max: 59 };
const HOUR: FieldRange = { min: 0, max: 23 };

/** The values a numeric cron field lists (`*`, `n`, `a-b`, steps, lists), or undefined for anything else. */
export function fieldValues(field: string, range: FieldRange): number[] | undefined {
  const out = new Set<number>();
  for (const part of field.split(',')) {
    const m = /^(\*|\d+(?:-\d+)?)(?:\/(\d+))?$/.exec(part);
    if (!m) return undefined;
    const step = m[2] !== undefined ? Number(m[2]) : 1;
    if (step < 1) return undefined;
    let lo: number;
    let hi: number;
    if (m[1] === '*') {
      lo = range.min;
      hi = range.max;
    } else {
      const [a, b] = m[1]!.split('-').map(Number);
      lo = a!;
      // `a/s` means from a to the end of the range, stepping s.
      hi = b !== undefined ? b : m[2] !== undefined ? range.max : a!;
    }
    if (lo < range.min || hi > range.max || lo > hi) return undefined;
    for (let v = lo; v <= hi; v += step) out.add(v);
  }
  return [...out].sort((x, y) => x - y);
}

/** A value set written the shortest usual way: `*`, `*\/s`, `a-b/s`, `a-b`, or a list. */
export function formatField(values: readonly number[], range: FieldRange): string {
  if (values.length === 0) return '';
  const first = values[0]!;
  const last = values[values.length - 1]!;
  if (values.length === 1) return String(first);
  const step = values[1]! - first;
  const even = values.every((v, i) => v === first + i * step);
  if (even && values.length >= 3) {
    if (step === 1) return first === range.min && last === range.max ? '*' : `${first}-${last}`;
    if (first === range.min && last + step > range.max) return `*/${step}`;
    return `${first}-${last}/${step}`;
  }
  return values.join(',');
}

/**
 * The cron expression that fires `minutes` later (earlier when negative) than `cron`, or `undefined` when
 * one expression cannot say it (see the module note). 5 fields, or 6 with seconds first (kept as is).
 *
 * @example
 * ```ts
 * shiftCron('0,30 7-9 * * 1-5', 10); // '10,40 7-9 * * 1-5'
 * shiftCron('50 7 * * *', 15); // '5 8 * * *'
 * shiftCron('0,30 7 * * 1-5', 40); // undefined (07:40 and 08:10 need two expressions)
 * ```
 */
export function shiftCron(cron: string, minutes: number): string | undefined {
  if (!Number.isInteger(minutes)) return undefined;
  const fields = cron.trim().split(/\s+/);
  if (fields.length !== 5 && fields.length !== 6) return undefined;
  if (minutes === 0) return fields.join(' ');
  const at = fields.length - 5;
  const minuteValues = fieldValues(fields[at]!, MINUTE);
  const hourValues = fieldValues(fields[at + 1]!, HOUR);
  if (!minuteValues || !hourValues) return undefined;
  const everyDay = fields.slice(at + 2).every((f) => f === '*' || f === '?');
  const everyHour = hourValues.length === 24;
  const moved = minuteValues.map((m) => m + minutes);
  const carries = new Set(moved.map((m) => Math.floor(m / 60)));
  let newMinutes: number[];
  let newHours: number[];
  if (everyHour && everyDay) {
    // Every hour of every day: only the minutes within the hour matter.
    newMinutes = [...new Set(moved.map((m) => ((m % 60) + 60) % 60))].sort((a, b) => a - b);
    newHours = hourValues;
  } else {
    if (carries.size !== 1) return undefined;
    const carry = [...carries][0]!;
    newMinutes = moved.map((m) => m - carry * 60);
    const hours = hourValues.map((h) => h + carry);
    // Crossing midnight would move the job to another day, which a restricted day field forbids.
    if (hours.some((h) => h < 0 || h > 23)) return undefined;
    newHours = hours;
  }
  const out = [...fields];
  out[at] = formatField(newMinutes, MINUTE);
  out[at + 1] = everyHour ? fields[at + 1]! : formatField(newHours, HOUR);
  return out.join(' ');
}
