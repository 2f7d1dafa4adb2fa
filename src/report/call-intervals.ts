/**
 * Counting over time for the report: how many calls overlap, how many fall in a sliding window.
 * Pure functions over epoch-ms numbers.
 */

/**
 * One call's time in flight, `start`..`end` epoch ms.
 *
 * @example
 * ```ts
 * const i: Interval = { start: attempt.data.startedAt, end: attempt.at };
 * ```
 */
export interface Interval {
  readonly start: number;
  readonly end: number;
}

/**
 * The most intervals in flight at one instant, and the first instant it happened.
 *
 * A call is in flight over `[start, end)`: one that ends exactly when another starts does not overlap
 * it (a token released and granted again in the same millisecond). A zero-length call (the clock did
 * not move while it ran: a refusal answered at once, or any call on a virtual clock that stands still
 * during real work) is in flight for an instant, and ties at that instant are read in log order, the
 * order of `intervals` (each call is logged when it ends): it overlaps the calls in flight across its
 * instant and those that end there later in the log. Calls that start at that instant, and other
 * zero-length calls there, are taken to come after it (a fallback right after a refused call).
 *
 * @param intervals in log order (the order the calls ended).
 * @example
 * ```ts
 * maxOverlap([{ start: 0, end: 10 }, { start: 5, end: 15 }, { start: 10, end: 20 }]); // { max: 2, at: 5 }
 * ```
 */
export function maxOverlap(intervals: readonly Interval[]): { max: number; at: number | null } {
  const spans: Interval[] = [];
  const instants: { at: number; index: number }[] = [];
  intervals.forEach(({ start, end }, index) => {
    if (!Number.isFinite(start) || !Number.isFinite(end)) return;
    if (end > start) spans.push({ start, end });
    else instants.push({ at: start, index });
  });
  // kind: 0 = end, 1 = start; ends first at a tie (the half-open rule).
  const edges: Array<[number, 0 | 1]> = [];
  for (const { start, end } of spans) edges.push([start, 1], [end, 0]);
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let current = 0;
  let max = 0;
  let at: number | null = null;
  for (const [time, kind] of edges) {
    if (kind === 1) {
      current++;
      if (current > max || (current === max && at !== null && time < at)) {
        max = current;
        at = time;
      }
    } else current--;
  }
  for (const instant of instants) {
    let count = 1;
    intervals.forEach((c, index) => {
      if (c.end <= c.start || !(c.start < instant.at)) return;
      if (c.end > instant.at || (c.end === instant.at && index > instant.index)) count++;
    });
    if (count > max || (count === max && at !== null && instant.at < at)) {
      max = count;
      at = instant.at;
    }
  }
  return { max, at };
}

/**
 * The most points inside any span of `windowMs` (`[t, t + windowMs)`), and where that span starts.
 *
 * @example
 * ```ts
 * maxInSlidingWindow([0, 10, 3_600_000], 3_600_000); // { count: 2, from: 0 }
 * ```
 */
export function maxInSlidingWindow(
  times: readonly number[],
  windowMs: number,
): { count: number; from: number | null } {
  const sorted = times.filter(Number.isFinite).sort((a, b) => a - b);
  let best = 0;
  let from: number | null = null;
  let left = 0;
  for (let right = 0; right < sorted.length; right++) {
    while (sorted[right]! - sorted[left]! >= windowMs) left++;
    const count = right - left + 1;
    if (count > best) {
      best = count;
      from = sorted[left]!;
    }
  }
  return { count: best, from };
}

/**
 * The most points that fall in one clock second (`floor(t / 1000)`).
 *
 * @example
 * ```ts
 * maxPerClockSecond([1_000, 1_999, 2_000]); // 2
 * ```
 */
export function maxPerClockSecond(times: readonly number[]): number {
  const perSecond = new Map<number, number>();
  let max = 0;
  for (const t of times) {
    if (!Number.isFinite(t)) continue;
    const s = Math.floor(t / 1000);
    const n = (perSecond.get(s) ?? 0) + 1;
    perSecond.set(s, n);
    if (n > max) max = n;
  }
  return max;
}

/**
 * The `p`-th percentile by nearest rank (p95 of 20 values is the 19th smallest); `null` for no values.
 *
 * @example
 * ```ts
 * percentile([5, 1, 3], 0.95); // 5
 * ```
 */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length, Math.max(1, Math.ceil(p * sorted.length)));
  return sorted[rank - 1]!;
}
