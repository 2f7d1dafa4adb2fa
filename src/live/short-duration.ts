/**
 * A remaining duration as a short label: `850ms`, `4.2s`, `38s`, `12m`, `2h`.
 *
 * @example
 * ```ts
 * shortDuration(4_200); // '4.2s'
 * ```
 */
export function shortDuration(ms: number): string {
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))}ms`;
  if (ms < 10_000) return `${(ms / 1000).toFixed(1)}s`;
  if (ms < 120_000) return `${Math.round(ms / 1000)}s`;
  if (ms < 7_200_000) return `${Math.round(ms / 60_000)}m`;
  return `${Math.round(ms / 3_600_000)}h`;
}
