import { ConfigError } from '../core/errors/config-error.ts';

/** Options of an {@link AimdLimiter}. */
export interface AimdLimiterOptions {
  /** Upper bound of the limit (the configured concurrency of the endpoint). Required. */
  readonly max: number;
  /** Lower bound of the limit. Default 1. */
  readonly min?: number;
  /** Starting limit. Default `max`. */
  readonly initial?: number;
  /** Multiplies the limit on a 429/overload (0 < f < 1). Default 0.5. */
  readonly decreaseFactor?: number;
  /** Added to the limit over one limit's worth of successes (`increasePerSuccess / limit` per success). Default 1. */
  readonly increasePerSuccess?: number;
}

/** How a call that held a slot ended. `overload` = 429 / 529 / 503: the endpoint asked us to slow down. */
export type AimdOutcome = 'success' | 'overload' | 'other';

/** Plain-data view of a limiter. */
export interface AimdLimiterState {
  readonly limit: number;
  readonly inFlight: number;
  /** The exact (fractional) limit behind `limit`. */
  readonly value: number;
}

/**
 * Adaptive concurrency for one endpoint (AIMD, as TCP does for its window): every success adds
 * `increasePerSuccess / limit`, so the limit grows by about one per round of successful calls; a
 * 429/overload multiplies it by `decreaseFactor`. A burst of overloads from calls that were already
 * in flight counts once: after a decrease, no further decrease until `limit` (the limit before that
 * decrease) more calls have been released. The limit stays within [min, max].
 *
 * @example
 * ```ts
 * const limiter = new AimdLimiter({ max: 8 });
 * if (limiter.tryAcquire()) {
 *   try { await call(); limiter.release('success'); }
 *   catch (e) { limiter.release(isOverload(e) ? 'overload' : 'other'); }
 * }
 * ```
 */
export class AimdLimiter {
  readonly max: number;
  readonly min: number;
  readonly decreaseFactor: number;
  readonly increasePerSuccess: number;
  #value: number;
  #inFlight = 0;
  /** Releases still to go before another decrease may happen. */
  #decreaseCooldown = 0;

  constructor(options: AimdLimiterOptions) {
    const { max, min = 1, decreaseFactor = 0.5, increasePerSuccess = 1 } = options;
    const initial = options.initial ?? max;
    if (!(Number.isInteger(max) && max >= 1)) invalid('max', max, 'an integer ≥ 1');
    if (!(Number.isInteger(min) && min >= 1 && min <= max))
      invalid('min', min, `an integer between 1 and max (${max})`);
    if (!(initial >= min && initial <= max))
      invalid('initial', initial, `a number between min (${min}) and max (${max})`);
    if (!(decreaseFactor > 0 && decreaseFactor < 1))
      invalid('decreaseFactor', decreaseFactor, 'a number between 0 and 1');
    if (!(increasePerSuccess >= 0 && Number.isFinite(increasePerSuccess))) {
      invalid('increasePerSuccess', increasePerSuccess, 'a number ≥ 0');
    }
    this.max = max;
    this.min = min;
    this.decreaseFactor = decreaseFactor;
    this.increasePerSuccess = increasePerSuccess;
    this.#value = initial;
  }

  /** Calls allowed in flight now: the integer part of the adaptive value, never below `min`. */
  get limit(): number {
    return Math.max(this.min, Math.floor(this.#value));
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Takes a slot when fewer than `limit` calls are in flight. */
  tryAcquire(): boolean {
    if (this.#inFlight >= this.limit) return false;
    this.#inFlight++;
    return true;
  }

  /**
   * Gives a slot back and adapts the limit to how the call ended. A release without a matching
   * acquire still adapts the limit (the outcome is real information) but leaves `inFlight` at 0.
   */
  release(outcome: AimdOutcome): void {
    this.#inFlight = Math.max(0, this.#inFlight - 1);
    const cooling = this.#decreaseCooldown > 0;
    if (cooling) this.#decreaseCooldown--;
    if (outcome === 'overload') {
      if (cooling) return;
      const before = this.limit;
      this.#value = Math.max(this.min, this.#value * this.decreaseFactor);
      // This release is the first of the burst's `before` releases; the rest must not decrease again.
      this.#decreaseCooldown = before - 1;
    } else if (outcome === 'success') {
      this.#value = Math.min(this.max, this.#value + this.increasePerSuccess / this.#value);
    }
  }

  /** Puts back an adapted limit (`state().value`, a resumed run); clamped to [min, max]. */
  restoreValue(value: number): void {
    if (Number.isFinite(value)) this.#value = Math.min(this.max, Math.max(this.min, value));
  }

  /** Plain-data view. */
  state(): AimdLimiterState {
    return { limit: this.limit, inFlight: this.#inFlight, value: this.#value };
  }
}

function invalid(path: string, value: unknown, expected: string): never {
  throw new ConfigError({
    source: 'AimdLimiter',
    path,
    message: `is ${String(value)}; set it to ${expected}`,
  });
}
