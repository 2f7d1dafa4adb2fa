import type { RateLimitWindow } from '../core/engine-types.ts';
import { TokenBucket } from '../resilience/token-bucket.ts';
import type { EndpointLimits } from './endpoint-health-types.ts';

/**
 * An endpoint's pace: its RPM and TPM buckets (its configured limits, corrected from the provider's rate-limit
 * headers and from what other processes heard on the same key, never above what is configured) and the pool's
 * shared RPM/TPM window (shared coordination). Part of the endpoint's `EndpointHealthTracker`; time comes from
 * the `now` each method is given.
 *
 * @example
 * ```ts
 * const pace = new EndpointPace({ rpm: 60, tpm: 90_000 });
 * if (pace.waitMs(900, now) <= 0) pace.take(900, now);
 * ```
 */
export class EndpointPace {
  /** Requests per minute (the buckets themselves are read for views and persistence). */
  readonly rpm: TokenBucket;
  /** Tokens per minute. */
  readonly tpm: TokenBucket;
  readonly #rpmLimit: number | undefined;
  readonly #tpmLimit: number | undefined;
  /** The pool's shared RPM/TPM window (every process's calls) has no room before this (shared coordination). */
  #sharedPaceUntil = 0;

  constructor(limits: EndpointLimits) {
    this.rpm = new TokenBucket(limits.rpm ? { capacity: limits.rpm } : {});
    this.tpm = new TokenBucket(limits.tpm ? { capacity: limits.tpm } : {});
    this.#rpmLimit = limits.rpm || undefined;
    this.#tpmLimit = limits.tpm || undefined;
  }

  /** How long a call of about `tokens` tokens waits for room, ms (none when ≤ 0). */
  waitMs(tokens: number, now: number): number {
    return Math.max(this.rpm.waitTime(1, now), this.tpm.waitTime(tokens, now), this.#sharedPaceUntil - now);
  }

  /** The shared window has no room before `until`; false when it had said so already (or later). */
  paceUntil(until: number): boolean {
    if (until <= this.#sharedPaceUntil) return false;
    this.#sharedPaceUntil = until;
    return true;
  }

  /** The limits a shared window enforces for this endpoint: its configured RPM/TPM, lowered by what headers said. */
  sharedLimits(now: number): { rpm: number | undefined; tpm: number | undefined } {
    const lower = (configured: number | undefined, bucket: TokenBucket) => {
      if (configured === undefined) return undefined;
      const learned = bucket.state(now).capacity;
      return learned !== undefined && learned < configured ? learned : configured;
    };
    return { rpm: lower(this.#rpmLimit, this.rpm), tpm: lower(this.#tpmLimit, this.tpm) };
  }

  /** A call was granted: it takes one request and its estimated tokens. */
  take(tokens: number, now: number): void {
    this.rpm.tryTake(1, now);
    this.tpm.tryTake(tokens, now);
  }

  /** A granted call never went: its request and its tokens come back. */
  refund(tokens: number, now: number): void {
    this.rpm.refund(1, now);
    this.tpm.refund(tokens, now);
  }

  /** A call used fewer tokens than it reserved: the rest come back. */
  refundTokens(tokens: number, now: number): void {
    this.tpm.refund(tokens, now);
  }

  /** A response's rate-limit windows (calls in flight already taken off): the buckets follow them. */
  observe(requests: RateLimitWindow | undefined, tokens: RateLimitWindow | undefined, now: number): void {
    if (requests) this.rpm.observe(atMost(requests, this.#rpmLimit), now);
    if (tokens) this.tpm.observe(atMost(tokens, this.#tpmLimit), now);
  }

  /**
   * The provider's latest counts for this key as another process heard them (shared coordination), less this
   * process's `inFlight` calls. Returns whether the buckets were told anything.
   */
  absorbShared(
    requests: RateLimitWindow | undefined,
    tokens: RateLimitWindow | undefined,
    inFlight: number,
    now: number,
  ): boolean {
    let changed = false;
    // Shared counts only lower availability: a `limit` above the capacity known here is not taken (a wrong or
    // hostile message must not let this process send more than its own headers allow).
    const noRaise = (w: RateLimitWindow, bucket: TokenBucket): RateLimitWindow => {
      const capacity = bucket.state(now).capacity;
      if (w.limit === undefined || capacity === undefined || w.limit <= capacity) return w;
      const { limit: _, ...rest } = w;
      return rest;
    };
    if (requests) {
      this.rpm.observe(noRaise(lessInFlight(requests, inFlight)!, this.rpm), now);
      changed = true;
    }
    if (tokens) {
      this.tpm.observe(noRaise(lessInFlight(tokens, inFlight)!, this.tpm), now);
      changed = true;
    }
    return changed;
  }
}

/** A rate-limit window with the calls still in flight taken off `remaining` (the provider has not counted them). */
export function lessInFlight(w: RateLimitWindow | undefined, inFlight: number): RateLimitWindow | undefined {
  return w && w.remaining !== undefined ? { ...w, remaining: Math.max(0, w.remaining - inFlight) } : w;
}

/**
 * `w` with its limit no higher than the `configured` one: a provider's headers may lower the pace a user set (the key
 * has less room than they thought) but never raise it (their limit may be a budget, or a share of a key used elsewhere).
 */
function atMost(w: RateLimitWindow, configured: number | undefined): RateLimitWindow {
  if (configured === undefined || w.limit === undefined || w.limit <= configured) return w;
  return { ...w, limit: configured };
}
