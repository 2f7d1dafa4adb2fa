import type { Clock } from '../clock/clock.ts';
import { MinHeap } from './min-heap.ts';

/** A deadline in a {@link TimerHeap}; `cancel()` is O(1) (the entry is dropped when it surfaces). */
export interface TimerEntry {
  readonly at: number;
  cancel(): void;
}

interface Entry extends TimerEntry {
  readonly seq: number;
  fn: (() => void) | undefined;
}

/** Cancelled entries are swept out once they are this many and more than the live ones. */
const COMPACT_MIN = 64;

/**
 * Every deadline of the runtime (lease overruns, endpoint refills and cooldown ends, breaker HALF-OPEN
 * ticks) in one binary min-heap, behind a single timer of the injected clock. Scheduling is O(log n),
 * cancelling O(1); the clock holds one timer however many deadlines wait, so a manual clock in a test and the
 * system clock in production see the same thing.
 *
 * Entries due at the same instant fire in the order they were scheduled.
 *
 * @example
 * ```ts
 * const timers = new TimerHeap(clock);
 * const lease = timers.schedule(clock.now() + 120_000, () => reclaim(leaseId));
 * lease.cancel(); // released in time
 * ```
 */
export class TimerHeap {
  readonly #clock: Clock;
  readonly #heap = new MinHeap<Entry>((a, b) => a.at < b.at || (a.at === b.at && a.seq < b.seq));
  #seq = 0;
  #cancelled = 0;
  #armedAt = Number.POSITIVE_INFINITY;
  #handle: unknown;
  #closed = false;

  constructor(clock: Clock) {
    this.#clock = clock;
  }

  /** Live (not cancelled, not fired) deadlines. */
  get size(): number {
    return this.#heap.size - this.#cancelled;
  }

  /** Calls `fn` once the clock reaches `at` (on the next firing when `at` is already past). */
  schedule(at: number, fn: () => void): TimerEntry {
    const entry: Entry = {
      at,
      seq: ++this.#seq,
      fn: this.#closed ? undefined : fn,
      cancel: () => {
        if (entry.fn === undefined) return;
        entry.fn = undefined;
        this.#cancelled++;
        if (this.#cancelled >= COMPACT_MIN && this.#cancelled * 2 >= this.#heap.size) {
          this.#heap.retain((e) => e.fn !== undefined);
          this.#cancelled = 0;
        }
      },
    };
    if (this.#closed) return entry;
    this.#heap.push(entry);
    if (at < this.#armedAt) this.#arm();
    return entry;
  }

  /** Drops every deadline and the clock timer. Later `schedule` calls do nothing. */
  close(): void {
    this.#closed = true;
    for (const e of this.#heap.values()) e.fn = undefined;
    this.#heap.clear();
    this.#cancelled = 0;
    this.#disarm();
  }

  #fire = (): void => {
    this.#handle = undefined;
    this.#armedAt = Number.POSITIVE_INFINITY;
    const now = this.#clock.now();
    // Collect first: a callback may schedule a deadline that is already due; it fires on the next round.
    const due: Array<() => void> = [];
    for (let top = this.#heap.peek(); top !== undefined && top.at <= now; top = this.#heap.peek()) {
      this.#heap.pop();
      if (top.fn === undefined) this.#cancelled--;
      else {
        due.push(top.fn);
        top.fn = undefined;
      }
    }
    // One throwing callback must not swallow the others' deadlines; the first error surfaces after re-arming.
    let failure: { error: unknown } | undefined;
    for (const fn of due) {
      try {
        fn();
      } catch (error) {
        failure ??= { error };
      }
    }
    if (!this.#closed) this.#arm();
    if (failure) throw failure.error;
  };

  #arm(): void {
    for (let top = this.#heap.peek(); top !== undefined && top.fn === undefined; top = this.#heap.peek()) {
      this.#heap.pop();
      this.#cancelled--;
    }
    const top = this.#heap.peek();
    if (!top) {
      this.#disarm();
      return;
    }
    if (top.at === this.#armedAt && this.#handle !== undefined) return;
    this.#disarm();
    this.#armedAt = top.at;
    this.#handle = this.#clock.setTimeout(this.#fire, Math.max(0, top.at - this.#clock.now()));
  }

  #disarm(): void {
    if (this.#handle !== undefined) this.#clock.clearTimeout(this.#handle);
    this.#handle = undefined;
    this.#armedAt = Number.POSITIVE_INFINITY;
  }
}
