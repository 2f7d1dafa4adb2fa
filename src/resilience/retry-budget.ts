import { ConfigError } from '../core/errors/config-error.ts';
import { SlidingLog } from './sliding-log.ts';

/** Options of a {@link RetryBudget}. */
export interface RetryBudgetOptions {
  /** Retries allowed per first attempt in the window (0.2 = one retry per five calls). Default 0.2. */
  readonly ratio?: number;
  /** Length of the sliding window, ms. Default 60 000. */
  readonly windowMs?: number;
  /** Retries always allowed per window, so a quiet endpoint can still retry. Default 3. */
  readonly minRetriesPerWindow?: number;
}

/** Plain-data view of a budget at one moment. */
export interface RetryBudgetState {
  readonly calls: number;
  readonly retries: number;
  /** Retries the window allows in total: max(minRetriesPerWindow, ratio × calls). */
  readonly allowed: number;
}

/**
 * Bounds retries to a fraction of first attempts over a sliding window, so a storm of failures
 * cannot multiply upstream traffic: in any window ending at a granted retry,
 * retries ≤ max(minRetriesPerWindow, ratio × first attempts).
 *
 * Only first attempts fund the budget (`recordCall`); retries never do, or a storm would feed itself.
 *
 * @example
 * ```ts
 * const budget = new RetryBudget({ ratio: 0.2 });
 * budget.recordCall(clock.now());            // every first attempt
 * if (fault && budget.tryRetry(clock.now())) retryLater(); else answerDegraded();
 * ```
 */
export class RetryBudget {
  readonly ratio: number;
  readonly windowMs: number;
  readonly minRetriesPerWindow: number;
  readonly #calls: SlidingLog;
  readonly #retries: SlidingLog;
  #lastNow = Number.NEGATIVE_INFINITY;

  constructor(options: RetryBudgetOptions = {}) {
    const { ratio = 0.2, windowMs = 60_000, minRetriesPerWindow = 3 } = options;
    if (!(ratio >= 0 && Number.isFinite(ratio)))
      invalid('ratio', ratio, 'a number ≥ 0 (0.2 = one retry per five calls)');
    if (!(windowMs > 0 && Number.isFinite(windowMs)))
      invalid('windowMs', windowMs, 'a positive number of ms');
    if (!(Number.isInteger(minRetriesPerWindow) && minRetriesPerWindow >= 0)) {
      invalid('minRetriesPerWindow', minRetriesPerWindow, 'an integer ≥ 0');
    }
    this.ratio = ratio;
    this.windowMs = windowMs;
    this.minRetriesPerWindow = minRetriesPerWindow;
    this.#calls = new SlidingLog(windowMs);
    this.#retries = new SlidingLog(windowMs);
  }

  /** Records a first attempt (not a retry). */
  recordCall(now: number): void {
    this.#calls.add(this.#advance(now), 1);
  }

  /** Whether {@link RetryBudget.tryRetry} would grant a retry now (nothing is counted). */
  canRetry(now: number): boolean {
    this.#advance(now);
    return this.#retries.total + 1 <= this.#allowed();
  }

  /** Grants a retry and counts it when the budget allows one now; false means do not retry. */
  tryRetry(now: number): boolean {
    const t = this.#advance(now);
    if (this.#retries.total + 1 > this.#allowed()) return false;
    this.#retries.add(t, 1);
    return true;
  }

  /** Plain-data view of the window ending at `now`. */
  state(now: number): RetryBudgetState {
    this.#advance(now);
    return { calls: this.#calls.total, retries: this.#retries.total, allowed: this.#allowed() };
  }

  #allowed(): number {
    return Math.max(this.minRetriesPerWindow, Math.floor(this.ratio * this.#calls.total + 1e-9));
  }

  #advance(now: number): number {
    const t = Math.max(now, this.#lastNow);
    this.#lastNow = t;
    this.#calls.prune(t);
    this.#retries.prune(t);
    return t;
  }
}

function invalid(path: string, value: unknown, expected: string): never {
  throw new ConfigError({
    source: 'RetryBudget',
    path,
    message: `is ${String(value)}; set it to ${expected}`,
  });
}
