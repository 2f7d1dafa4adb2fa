import type { RateLimitWindow } from '../core/engine-types.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import { SlidingLog } from './sliding-log.ts';

/** Refunds of fractional token counts must not leave a bucket blocked by rounding dust. */
const EPSILON = 1e-9;

/** Options of a {@link TokenBucket}. */
export interface TokenBucketOptions {
  /**
   * Units allowed per window (requests for RPM, tokens for TPM). Default: unknown — the bucket never
   * blocks until a rate-limit header tells it the limit.
   */
  readonly capacity?: number;
  /** Length of the window, ms. Default 60 000 (a minute). */
  readonly windowMs?: number;
}

/** Plain-data view of a bucket at one moment. */
export interface TokenBucketState {
  /** Units per window, when known. */
  readonly capacity?: number;
  /** Units that could be taken now, when the capacity is known. */
  readonly available?: number;
  /** Epoch ms until which the provider said nothing is left (`remaining: 0`), when holding. */
  readonly holdUntil?: number;
}

/** A bucket's content as plain data (see {@link TokenBucket.export}). */
export interface TokenBucketExport {
  readonly capacity?: number;
  readonly holdUntil?: number;
  /** `[at, units]` still in the window, oldest first, grouped in slots of 1/60 of the window (`at` = slot end). */
  readonly used: readonly (readonly [number, number])[];
}

/**
 * RPM/TPM pacing for one endpoint, corrected by the provider's rate-limit headers.
 *
 * Refill: every unit taken comes back exactly `windowMs` after it was taken (a sliding-window log).
 * A classic continuous-refill bucket lets up to twice its capacity through in a window that straddles
 * a burst (a full bucket drained at once, then refill during the same minute); this one guarantees at
 * most `capacity` units in ANY sliding window, so it can never be the cause of a 429, whatever the
 * provider's own refill rule, and still allows a full burst after a quiet minute.
 *
 * A cost larger than the capacity would never fit; it is clamped to the capacity instead (it waits for
 * an empty window and then takes all of it), so `waitTime` is always finite.
 *
 * @example
 * ```ts
 * const rpm = new TokenBucket({ capacity: 60 });
 * const wait = rpm.waitTime(1, clock.now());
 * if (wait === 0) rpm.tryTake(1, clock.now()); else scheduleRetryIn(wait);
 * // after the call, the provider's word wins:
 * rpm.observe({ limit: 50, remaining: 3, resetAt: clock.now() + 20_000 }, clock.now());
 * ```
 */
export class TokenBucket {
  readonly windowMs: number;
  #capacity: number | undefined;
  readonly #log: SlidingLog;
  #holdUntil: number | undefined;
  #lastNow = Number.NEGATIVE_INFINITY;

  constructor(options: TokenBucketOptions = {}) {
    const { capacity, windowMs = 60_000 } = options;
    if (capacity !== undefined && !(capacity > 0 && Number.isFinite(capacity))) {
      throw new ConfigError({
        source: 'TokenBucket',
        path: 'capacity',
        message: `is ${capacity}; set a positive number of units per window, or leave it out when unknown`,
      });
    }
    if (!(windowMs > 0 && Number.isFinite(windowMs))) {
      throw new ConfigError({
        source: 'TokenBucket',
        path: 'windowMs',
        message: `is ${windowMs}; set a positive number of ms`,
      });
    }
    this.windowMs = windowMs;
    this.#capacity = capacity;
    this.#log = new SlidingLog(windowMs);
  }

  /** Units per window, or `undefined` while unknown. */
  get capacity(): number | undefined {
    return this.#capacity;
  }

  /**
   * Takes `cost` units if they are available now. Always succeeds while the capacity is unknown
   * (unless the provider said `remaining: 0`).
   */
  tryTake(cost: number, now: number): boolean {
    const t = this.#advance(now);
    if (this.#holdUntil !== undefined) return false;
    const units = this.#capacity === undefined ? cost : Math.min(cost, this.#capacity);
    if (this.#capacity !== undefined && this.#log.total + units > this.#capacity + EPSILON) return false;
    this.#log.add(t, units);
    return true;
  }

  /**
   * Milliseconds until `cost` units can be taken (0 = now). Finite: a cost above the capacity is
   * clamped to the capacity. 0 while the capacity is unknown and the provider has not said `remaining: 0`.
   */
  waitTime(cost: number, now: number): number {
    const t = this.#advance(now);
    if (this.#holdUntil !== undefined) return this.#holdUntil - t;
    if (this.#capacity === undefined) return 0;
    const units = Math.min(cost, this.#capacity);
    const excess = this.#log.total + units - this.#capacity;
    if (excess <= EPSILON) return 0;
    const at = this.#log.freedBy(excess);
    // The log always holds at least `excess` (units ≤ capacity), so `at` is defined; guard anyway.
    return at === undefined ? this.windowMs : Math.max(0, at - t);
  }

  /**
   * Gives back units taken but not used (a call that was never sent, or a TPM estimate above the
   * actual usage). Never raises the available units above the capacity.
   */
  refund(amount: number, now: number): void {
    this.#advance(now);
    if (amount > 0) this.#log.reduceNewest(amount);
  }

  /**
   * Records units used beyond what was taken (actual TPM usage above the estimate), even when that
   * overdraws the window: later takers wait for it to leave the window.
   */
  charge(amount: number, now: number): void {
    const t = this.#advance(now);
    this.#log.add(t, amount);
  }

  /**
   * Corrects the estimate from the provider's rate-limit headers; the provider's word wins:
   * - `limit` sets the capacity;
   * - `remaining` lowers the available units to it (never raises them: calls in flight are not in
   *   the provider's count yet);
   * - `remaining: 0` with a future `resetAt` holds every take until `resetAt`, when the provider's
   *   window is fully replenished and the bucket starts empty again.
   */
  observe(window: RateLimitWindow, now: number): void {
    const t = this.#advance(now);
    if (window.limit !== undefined && window.limit > 0 && Number.isFinite(window.limit)) {
      this.#capacity = window.limit;
    }
    const { remaining, resetAt } = window;
    if (remaining === undefined || remaining < 0) return;
    if (remaining === 0 && resetAt !== undefined && resetAt > t) {
      this.#holdUntil = Math.max(this.#holdUntil ?? resetAt, resetAt);
    }
    if (this.#capacity === undefined) return;
    const available = this.#capacity - this.#log.total;
    // The shortfall is counted as units used now, so it leaves the window like real usage.
    if (available > remaining) this.#log.add(t, available - remaining);
  }

  /** Plain-data view of the bucket at `now`. */
  state(now: number): TokenBucketState {
    this.#advance(now);
    if (this.#capacity === undefined) {
      return this.#holdUntil !== undefined ? { holdUntil: this.#holdUntil } : {};
    }
    const available = this.#holdUntil !== undefined ? 0 : Math.max(0, this.#capacity - this.#log.total);
    return {
      capacity: this.#capacity,
      available,
      ...(this.#holdUntil !== undefined ? { holdUntil: this.#holdUntil } : {}),
    };
  }

  /**
   * What the bucket holds, as plain data: the capacity (learned from headers too), the units still in the
   * window with when they were taken, and a provider hold. {@link TokenBucket.restore} puts it back.
   */
  export(now: number): TokenBucketExport {
    this.#advance(now);
    // Units are grouped in slots of 1/60 of the window, each stamped with its slot's END: a restored unit leaves
    // the window at most one slot later than it would have, never earlier (so the restored bucket never lets
    // more through than the provider allows), and the export holds at most 61 entries however busy the endpoint.
    const slot = Math.max(1, Math.floor(this.windowMs / 60));
    const used: [number, number][] = [];
    for (const [at, cost] of this.#log.entries()) {
      const end = Math.ceil(at / slot) * slot;
      const last = used[used.length - 1];
      if (last && last[0] === end) last[1] += cost;
      else used.push([end, cost]);
    }
    return {
      ...(this.#capacity !== undefined ? { capacity: this.#capacity } : {}),
      ...(this.#holdUntil !== undefined ? { holdUntil: this.#holdUntil } : {}),
      used,
    };
  }

  /** Takes back what {@link TokenBucket.export} gave (a resumed run): the same units leave the window at the same instants. */
  restore(data: TokenBucketExport): void {
    if (data.capacity !== undefined && data.capacity > 0 && Number.isFinite(data.capacity))
      this.#capacity = data.capacity;
    if (data.holdUntil !== undefined && Number.isFinite(data.holdUntil)) this.#holdUntil = data.holdUntil;
    for (const [at, cost] of data.used ?? []) {
      if (Number.isFinite(at) && Number.isFinite(cost)) this.#log.add(at, cost);
    }
  }

  /** Moves the bucket to `now` (never backwards): ends a hold that is over, forgets expired units. */
  #advance(now: number): number {
    const t = Math.max(now, this.#lastNow);
    this.#lastNow = t;
    if (this.#holdUntil !== undefined && t >= this.#holdUntil) {
      this.#log.clearBefore(this.#holdUntil);
      this.#holdUntil = undefined;
    }
    this.#log.prune(t);
    return t;
  }
}
