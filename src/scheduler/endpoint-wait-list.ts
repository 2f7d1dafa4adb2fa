import { MinHeap } from '../clock/min-heap.ts';
import type { TimerEntry } from '../clock/timer-heap.ts';
import { servedBefore, type Waiter } from './waiter.ts';

interface ParkEntry {
  readonly waiter: Waiter;
  readonly version: number;
}

const live = (e: ParkEntry) => e.waiter.state === 'parked' && e.waiter.parkVersion === e.version;

/** Stale entries are swept out once they are this many and more than the live ones. */
const COMPACT_MIN = 64;

/**
 * The waiters parked on one endpoint (it was paced or at its concurrency cap for them), in serving order.
 * A waiter parks on every endpoint of its chain and is woken by whichever frees first; leaving one list
 * leaves stale entries in the others, dropped when they surface (or swept when they pile up), so parking and
 * leaving cost O(log n).
 *
 * @example
 * ```ts
 * list.park(w);
 * list.top(); // the waiter to look at when this endpoint refills or a call on it ends
 * ```
 */
export class EndpointWaitList {
  readonly #heap = new MinHeap<ParkEntry>((a, b) => servedBefore(a.waiter, b.waiter));
  #stale = 0;
  /** The armed wake-up (a refill or a cooldown end), if any. */
  timer: TimerEntry | undefined;

  park(w: Waiter): void {
    this.#heap.push({ waiter: w, version: w.parkVersion });
  }

  /** The first live waiter in serving order, or undefined. */
  top(): Waiter | undefined {
    for (let e = this.#heap.peek(); e !== undefined; e = this.#heap.peek()) {
      if (live(e)) return e.waiter;
      this.#heap.pop();
      if (this.#stale > 0) this.#stale--;
    }
    return undefined;
  }

  /** One of its entries went stale (its waiter left). */
  markStale(): void {
    this.#stale++;
    if (this.#stale >= COMPACT_MIN && this.#stale * 2 >= this.#heap.size) {
      this.#heap.retain(live);
      this.#stale = 0;
    }
  }

  /** Live waiters (for views). */
  *waiters(): IterableIterator<Waiter> {
    for (const e of this.#heap.values()) if (live(e)) yield e.waiter;
  }

  get empty(): boolean {
    return this.top() === undefined;
  }
}
