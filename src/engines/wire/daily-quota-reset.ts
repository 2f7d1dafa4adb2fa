import { zonedParts, zonedTimeToEpoch } from '../../clock/zoned-time.ts';

/**
 * The zone whose midnight resets Gemini's per-day quotas ("Requests per day … reset at midnight
 * Pacific time", ai.google.dev rate-limits page).
 *
 * @example
 * ```ts
 * msUntilDailyReset(Date.now(), GEMINI_DAILY_RESET_ZONE);
 * ```
 */
export const GEMINI_DAILY_RESET_ZONE = 'America/Los_Angeles';

/**
 * Wall-clock ms from `wallNow` to the next midnight in `timeZone` (DST-aware: a 23 h or 25 h day
 * counts as it is). Always > 0: at midnight exactly, the next one is a day away.
 *
 * @param wallNow epoch ms on the provider's own clock: the wall (`Date.now()`) for a real provider, whose day
 *   turns over in real time; the run's clock for the built-in emulator on it (a scenario's day, so the same
 *   scenario gives the same disable at any hour of the wall).
 * @example
 * ```ts
 * msUntilDailyReset(Date.parse('2026-03-02T07:00:00Z'), 'America/Los_Angeles'); // 1 h: 23:00 PST → 00:00 PST
 * ```
 */
export function msUntilDailyReset(wallNow: number, timeZone: string): number {
  const today = zonedParts(wallNow, timeZone);
  // Date.UTC normalises day + 1 across month and year ends; only the calendar fields are used.
  const next = new Date(Date.UTC(today.year, today.month - 1, today.day + 1));
  const midnight = zonedTimeToEpoch(
    {
      year: next.getUTCFullYear(),
      month: next.getUTCMonth() + 1,
      day: next.getUTCDate(),
      hour: 0,
      minute: 0,
      second: 0,
    },
    timeZone,
  );
  return Math.max(1, midnight - wallNow);
}
