/**
 * The ceiling on any wait a provider asks for. A `retry-after` of a year, a reset instant read against
 * the wrong clock, or a proxy's nonsense header must not park an endpoint for good: the wait is cut to
 * the cap and the fault remembers what was asked (`retryAfterCappedFromMs`) so the runtime can log it.
 */

/**
 * Default ceiling on a provider-given wait (`retry-after`, reset headers, Gemini `retryDelay`): 15 min.
 * Per endpoint: `maxRetryAfterMs` in the endpoint config.
 *
 * @example
 * ```ts
 * DEFAULT_MAX_RETRY_AFTER_MS; // 900000
 * ```
 */
export const DEFAULT_MAX_RETRY_AFTER_MS = 15 * 60_000;

/**
 * A provider-given wait after the cap.
 *
 * @example
 * ```ts
 * const { retryAfterMs, cappedFromMs } = capRetryAfter(asked, config.maxRetryAfterMs);
 * ```
 */
export interface CappedWait {
  /** The wait to honour: the asked one, or `maxMs` when it asked for more. */
  readonly retryAfterMs: number;
  /** The wait that was asked for, only when it was cut. */
  readonly cappedFromMs?: number;
}

/**
 * Cuts a provider-given wait to `maxMs`.
 *
 * @param askedMs the wait the provider asked for, ms (≥ 0).
 * @param maxMs the ceiling, ms. Default {@link DEFAULT_MAX_RETRY_AFTER_MS}.
 * @example
 * ```ts
 * capRetryAfter(7_000);            // { retryAfterMs: 7000 }
 * capRetryAfter(23_678_666_615);   // { retryAfterMs: 900000, cappedFromMs: 23678666615 }
 * ```
 */
export function capRetryAfter(askedMs: number, maxMs: number = DEFAULT_MAX_RETRY_AFTER_MS): CappedWait {
  return askedMs > maxMs ? { retryAfterMs: maxMs, cappedFromMs: askedMs } : { retryAfterMs: askedMs };
}
