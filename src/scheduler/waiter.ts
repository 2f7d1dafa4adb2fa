import type { TokenDecision, TokenRequest } from './token-scheduler.ts';

/** A request waiting for a token: in its tier's FIFO, or parked on the endpoints of its chain. */
export interface Waiter {
  /** Arrival order; with `rank`, the serving order. */
  readonly seq: number;
  /** Tier rank: 0 is served first; probes are -1. */
  readonly rank: number;
  readonly request: TokenRequest;
  readonly enqueuedAt: number;
  readonly resolve: (d: TokenDecision) => void;
  readonly reject: (e: unknown) => void;
  state: 'new' | 'fifo' | 'parked' | 'done';
  /** Bumped on every park and unpark: a parked entry with an older version is stale. */
  parkVersion: number;
  /** The endpoints it is parked on (to count stale entries when it leaves). */
  parkedOn: readonly string[];
  prev: Waiter | undefined;
  next: Waiter | undefined;
}

/** Serving order: tier rank, then arrival. */
export function servedBefore(a: Waiter, b: Waiter): boolean {
  return a.rank < b.rank || (a.rank === b.rank && a.seq < b.seq);
}

/**
 * One tier's waiters in arrival order: a doubly linked list, so enqueue, dequeue and withdrawal from the
 * middle (an aborted request) are O(1).
 *
 * @example
 * ```ts
 * const fifo = new WaiterFifo();
 * fifo.push(w);
 * fifo.remove(w); // its signal aborted
 * ```
 */
export class WaiterFifo {
  #head: Waiter | undefined;
  #tail: Waiter | undefined;
  #size = 0;

  get size(): number {
    return this.#size;
  }

  get head(): Waiter | undefined {
    return this.#head;
  }

  push(w: Waiter): void {
    w.state = 'fifo';
    w.prev = this.#tail;
    w.next = undefined;
    if (this.#tail) this.#tail.next = w;
    else this.#head = w;
    this.#tail = w;
    this.#size++;
  }

  remove(w: Waiter): void {
    if (w.prev) w.prev.next = w.next;
    else this.#head = w.next;
    if (w.next) w.next.prev = w.prev;
    else this.#tail = w.prev;
    w.prev = undefined;
    w.next = undefined;
    this.#size--;
  }

  *values(): IterableIterator<Waiter> {
    for (let w = this.#head; w; w = w.next) yield w;
  }
}
