/**
 * A sliding time window of call outcomes, kept as plain data so it can live in an actor's context
 * and be persisted with the snapshot.
 *
 * Outcomes are counted in buckets of 1/60 of the window (1 s for the default minute) rather than
 * one entry per call: a busy endpoint then costs at most 61 small objects in a snapshot, whatever
 * its traffic. The price is granularity — an outcome leaves the window between `windowMs` and
 * `windowMs + bucketMs` after it happened, never earlier.
 */

/** Calls and failures that happened in `[start, start + bucketMs)`. */
export interface OutcomeBucket {
  readonly start: number;
  readonly calls: number;
  readonly failures: number;
}

/** Totals over the buckets still in the window. */
export interface OutcomeTotals {
  readonly calls: number;
  readonly failures: number;
}

/** Number of buckets a window is split into. */
const BUCKETS_PER_WINDOW = 60;

/** Width of one bucket for a window of `windowMs` (at least 1 ms). */
export function bucketWidth(windowMs: number): number {
  return Math.max(1, Math.ceil(windowMs / BUCKETS_PER_WINDOW));
}

/**
 * Drops the buckets that lie entirely before `now - windowMs`.
 *
 * @example
 * ```ts
 * pruneOutcomes([{ start: 0, calls: 3, failures: 1 }], 61_000, 60_000); // []
 * ```
 */
export function pruneOutcomes(
  buckets: readonly OutcomeBucket[],
  now: number,
  windowMs: number,
): OutcomeBucket[] {
  const width = bucketWidth(windowMs);
  const horizon = now - windowMs;
  return buckets.filter((b) => b.start + width > horizon);
}

/**
 * Records one outcome at `at` and returns the pruned window. Outcomes that arrive out of order
 * land in their own bucket; outcomes already older than the window are dropped.
 *
 * @example
 * ```ts
 * let w = recordOutcome([], 1_000, true, 60_000);
 * w = recordOutcome(w, 1_500, false, 60_000);
 * outcomeTotals(w, 2_000, 60_000); // { calls: 2, failures: 1 }
 * ```
 */
export function recordOutcome(
  buckets: readonly OutcomeBucket[],
  at: number,
  failed: boolean,
  windowMs: number,
  /** How many such outcomes (in the bucket of `at`); default 1. */
  count = 1,
): OutcomeBucket[] {
  const width = bucketWidth(windowMs);
  const start = Math.floor(at / width) * width;
  // A late event must not drag the window back in time: prune against the newest time seen.
  const reference = Math.max(at, latestStart(buckets));
  const pruned = pruneOutcomes(buckets, reference, windowMs);
  if (start + width <= reference - windowMs) return pruned;
  const index = pruned.findIndex((b) => b.start === start);
  const add = failed ? count : 0;
  if (index >= 0) {
    const b = pruned[index]!;
    pruned[index] = { start, calls: b.calls + count, failures: b.failures + add };
    return pruned;
  }
  pruned.push({ start, calls: count, failures: add });
  pruned.sort((a, b) => a.start - b.start);
  return pruned;
}

/**
 * Calls and failures in the window ending at `now`.
 *
 * @example
 * ```ts
 * outcomeTotals([{ start: 0, calls: 5, failures: 2 }], 30_000, 60_000); // { calls: 5, failures: 2 }
 * ```
 */
export function outcomeTotals(
  buckets: readonly OutcomeBucket[],
  now: number,
  windowMs: number,
): OutcomeTotals {
  let calls = 0;
  let failures = 0;
  for (const b of pruneOutcomes(buckets, now, windowMs)) {
    calls += b.calls;
    failures += b.failures;
  }
  return { calls, failures };
}

function latestStart(buckets: readonly OutcomeBucket[]): number {
  let latest = Number.NEGATIVE_INFINITY;
  for (const b of buckets) if (b.start > latest) latest = b.start;
  return latest;
}
