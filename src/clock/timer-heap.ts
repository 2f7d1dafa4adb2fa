import type { Clock } from './clock.ts';
import { MinHeap } from './min-heap.ts';

/** A deadline in a {@link TimerHeap}; `cancel()` is O(1) (the entry is dropped when it surfaces). */
export interface TimerEntry {
  readonly at: number;
  cancel(): void;
}

/** A class, not an object with a closure: one is made per grant, on the hot path. */
class Entry implements TimerEntry {
  readonly at: number;
  readonly seq: number;
  fn: ((arg: unknown) => void) | undefined;
  readonly arg: unknown;
  readonly #heap: TimerHeap;

  constructor(
    heap: TimerHeap,
    at: number,
    seq: number,
    fn: ((arg: unknown) => void) | undefined,
    arg: unknown,
  ) {
    this.#heap = heap;
    this.at = at;
    this.seq = seq;
    this.fn = fn;
    this.arg = arg;
  }

  cancel(): void {
    if (this.fn === undefined) return;
    this.fn = undefined;
    this.#heap.cancelled();
  }
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
  readonly #heap = new MinHeap<Entry>(earlier);
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

  /**
   * Calls `fn(arg)` once the clock reaches `at` (on the next firing when `at` is already past). Passing `arg`
   * lets a caller use one function for many deadlines instead of a closure each.
   */
  schedule<A>(at: number, fn: (arg: A) => void, arg?: A): TimerEntry {
    const entry = new Entry(
      this,
      at,
      ++this.#seq,
      this.#closed ? undefined : (fn as (arg: unknown) => void),
      arg,
    );
    if (this.#closed) return entry;
    this.#heap.push(entry);
    if (at < this.#armedAt) this.#arm();
    return entry;
  }

  /** An entry was cancelled: sweep them out once they pile up. @internal */
  cancelled(): void {
    this.#cancelled++;
    if (this.#cancelled >= COMPACT_MIN && this.#cancelled * 2 >= this.#heap.size) {
      this.#heap.retain(isLive);
      this.#cancelled = 0;
    }
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
    const due: Entry[] = [];
    for (let top = this.#heap.peek(); top !== undefined && top.at <= now; top = this.#heap.peek()) {
      this.#heap.pop();
      if (top.fn === undefined) this.#cancelled--;
      else due.push(top);
    }
    // One throwing callback must not swallow the others' deadlines; the first error surfaces after re-arming.
    let failure: { error: unknown } | undefined;
    for (const e of due) {
      const fn = e.fn;
      e.fn = undefined;
      try {
        fn?.(e.arg);
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

function earlier(a: Entry, b: Entry): boolean {
  return a.at < b.at || (a.at === b.at && a.seq < b.seq);
}

function isLive(e: Entry): boolean {
  return e.fn !== undefined;
}
