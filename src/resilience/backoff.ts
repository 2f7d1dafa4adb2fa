import type { Fault } from '../core/fault.ts';

/** Options of {@link backoffDelay} and {@link retryDelay}. */
export interface BackoffOptions {
  /** Delay cap of the first retry (attempt 0), ms. Default 500. */
  readonly baseMs?: number;
  /** Upper bound of any backoff, ms. Default 30 000. */
  readonly maxMs?: number;
  /** Uniform source in [0, 1). Default `Math.random`; inject a seeded one for reproducible runs. */
  readonly random?: () => number;
}

/**
 * Jittered exponential backoff with FULL jitter: uniform in [0, min(maxMs, baseMs · 2^attempt)].
 * Full jitter spreads a herd of clients that failed together across the whole interval, so their
 * retries do not arrive together again (un-jittered retries re-tripped the limiter in seed 003).
 *
 * @param attempt 0 for the first retry, 1 for the second, …
 *
 * @example
 * ```ts
 * backoffDelay(3, { baseMs: 500, random: () => 0.5 }); // 2000 (half of 4000)
 * ```
 */
export function backoffDelay(attempt: number, options: BackoffOptions = {}): number {
  const { baseMs = 500, maxMs = 30_000, random = Math.random } = options;
  const exponent = Math.max(0, Math.floor(Number.isFinite(attempt) ? attempt : 0));
  // 2^1024 is Infinity; capping the exponent keeps the arithmetic finite before the min.
  const ceiling = Math.max(0, Math.min(maxMs, baseMs * 2 ** Math.min(exponent, 1_000)));
  const r = Math.min(Math.max(random(), 0), 1);
  return Math.round(r * ceiling);
}

/**
 * The delay before retrying after `fault`: the jittered backoff, but never earlier than the
 * provider's Retry-After.
 *
 * @example
 * ```ts
 * retryDelay({ retryAfterMs: 20_000 }, 0); // ≥ 20 000: the provider's word is a floor
 * ```
 */
export function retryDelay(
  fault: Pick<Fault, 'retryAfterMs'>,
  attempt: number,
  options: BackoffOptions = {},
): number {
  return Math.max(fault.retryAfterMs ?? 0, backoffDelay(attempt, options));
}
