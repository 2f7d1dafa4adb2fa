/**
 * Small statistics helpers shared by the benchmarks. Percentiles use the nearest-rank method on a
 * sorted copy, so p50 of [1, 2, 3, 4] is 2 and p99 of 100 samples is the 99th smallest.
 */

/** The `p`-th percentile (0–100) of `values`, nearest rank; `NaN` for an empty list. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = Float64Array.from(values).sort();
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

/** Arithmetic mean; `NaN` for an empty list. */
export function mean(values: readonly number[]): number {
  if (values.length === 0) return Number.NaN;
  let sum = 0;
  for (const v of values) sum += v;
  return sum / values.length;
}

/** Rounds to `digits` decimals (results JSON stays readable). */
export function round(value: number, digits = 3): number {
  if (!Number.isFinite(value)) return value;
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** p50/p90/p99/max of a latency sample, in the sample's unit, rounded. */
export function summarize(values: readonly number[]): { p50: number; p90: number; p99: number; max: number } {
  return {
    p50: round(percentile(values, 50)),
    p90: round(percentile(values, 90)),
    p99: round(percentile(values, 99)),
    max: round(percentile(values, 100)),
  };
}
