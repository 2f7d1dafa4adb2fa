/**
 * A job's flex: how far the planner may move its firings, in whole minutes. `flex: 0` pins a job; a job
 * without `flex` is pinned too (a schedule is the user's, moved only where they allowed it).
 */

/** Longest flex a job may declare, minutes (half a day: a longer move is a different job). */
export const MAX_FLEX_MINUTES = 720;

/** The minutes a job may move earlier and later; both 0 for a pinned job. */
export interface FlexWindow {
  readonly earlier: number;
  readonly later: number;
}

/** A pinned job's window. */
export const PINNED: FlexWindow = Object.freeze({ earlier: 0, later: 0 });

const FLEX = /^([+-])?\s*(\d+)\s*(m|min|h)?$/;

/** What a person writes, for the error of a flex that does not parse. */
export const FLEX_HINT =
  'write 0 (pinned), 30m (up to 30 minutes either way), +30m (only later), -15m (only earlier) or 1h';

/**
 * Reads a job's `flex`: a number of minutes, or `30m`, `1h`, `+30m` (later only), `-15m` (earlier
 * only), `0` (pinned). Returns the window, or a message saying what is wrong (the caller names the file
 * and field). Absent means pinned.
 *
 * @example
 * ```ts
 * parseFlex('30m'); // { earlier: 30, later: 30 }
 * parseFlex('+1h'); // { earlier: 0, later: 60 }
 * parseFlex('soon'); // '"soon" is not a window; write 0 (pinned), 30m, …'
 * ```
 */
export function parseFlex(flex: string | number | undefined): FlexWindow | string {
  if (flex === undefined) return PINNED;
  const text = String(flex).trim();
  const m = FLEX.exec(text);
  if (!m || (typeof flex === 'number' && !Number.isInteger(flex)))
    return `"${text}" is not a window; ${FLEX_HINT}`;
  const minutes = Number(m[2]) * (m[3] === 'h' ? 60 : 1);
  if (minutes > MAX_FLEX_MINUTES)
    return `"${text}" is ${minutes} minutes; a job may move at most ${MAX_FLEX_MINUTES} minutes (12 h)`;
  if (m[1] === '+') return { earlier: 0, later: minutes };
  if (m[1] === '-') return { earlier: minutes, later: 0 };
  return { earlier: minutes, later: minutes };
}

/**
 * How a window reads in a plan: `pinned`, `±30m`, `+30m`, `-15m`.
 *
 * @example
 * ```ts
 * formatFlex({ earlier: 30, later: 30 }); // '±30m'
 * ```
 */
export function formatFlex(w: FlexWindow): string {
  if (w.earlier === 0 && w.later === 0) return 'pinned';
  if (w.earlier === w.later) return `±${w.later}m`;
  if (w.earlier === 0) return `+${w.later}m`;
  if (w.later === 0) return `-${w.earlier}m`;
  return `-${w.earlier}m/+${w.later}m`;
}
