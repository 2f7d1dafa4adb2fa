import type { TimerEntry, TimerHeap } from '../clock/timer-heap.ts';

/**
 * A token kept for the holder that just gave it back, for a moment: the slack policy's hand-off. An agent on the
 * critical path of the work left asks again as soon as its ask ends, but by then the token it released has gone to
 * whoever waited, and it waits for the next one to come free: a gap per ask that stretches exactly the chain that
 * decides when the work ends. Kept for `windowMs` at most: if the holder has not asked by then (it runs a tool, or
 * it had no more work), the token goes back to the queue.
 *
 * @example
 * ```ts
 * handoff.hold('Rex', now); // Rex released a call and is critical
 * handoff.take('Rex'); // true: Rex's next request gets the kept token
 * ```
 */
export class TokenHandoff {
  readonly #timers: TimerHeap;
  readonly #windowMs: number;
  /** The token is back for the queue (the window ran out): the scheduler serves it. */
  readonly #onExpired: () => void;
  readonly #kept = new Map<string, TimerEntry>();

  constructor(timers: TimerHeap, windowMs: number, onExpired: () => void) {
    this.#timers = timers;
    this.#windowMs = windowMs;
    this.#onExpired = onExpired;
  }

  /** Tokens kept (they count as held for everyone else). */
  get kept(): number {
    return this.#kept.size;
  }

  /** Keeps one token for `holder` until `now + windowMs` (one per holder). */
  hold(holder: string, now: number): boolean {
    if (this.#kept.has(holder) || this.#windowMs <= 0) return false;
    const timer = this.#timers.schedule(now + this.#windowMs, () => {
      this.#kept.delete(holder);
      this.#onExpired();
    });
    this.#kept.set(holder, timer);
    return true;
  }

  /** Whether a token is kept for `holder`; if so it is its now (the keeping ends). */
  take(holder: string): boolean {
    const timer = this.#kept.get(holder);
    if (!timer) return false;
    timer.cancel();
    this.#kept.delete(holder);
    return true;
  }

  /** Gives every kept token back to the queue, without a call to `onExpired`. */
  dropAll(): void {
    for (const timer of this.#kept.values()) timer.cancel();
    this.#kept.clear();
  }
}
