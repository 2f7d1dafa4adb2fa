import type { TokenDecision, TokenRequest } from './token-scheduler.ts';

/** A request waiting for a token: in its tier's FIFO, or parked on the endpoints of its chain. */
export interface Waiter {
  /** Arrival order; with `rank`, the serving order. */
  readonly seq: number;
  /** Tier rank: 0 is served first; probes are -1. */
  readonly rank: number;
  /**
   * The serving key: `rank` under strict tier priority; with tier aging, the time the request would be served
   * at if every tier above it waited `agingMs` less (`enqueuedAt + rank × agingMs`). Fixed at enqueue, so a heap
   * or a FIFO stays ordered while requests age.
   */
  readonly order: number;
  readonly request: TokenRequest;
  readonly enqueuedAt: number;
  readonly resolve: (d: TokenDecision) => void;
  readonly reject: (e: unknown) => void;
  state: 'new' | 'fifo' | 'parked' | 'done';
  /** Bumped on every park and unpark: a parked entry with an older version is stale. */
  parkVersion: number;
  /** The slack policy's delay count of its tier when it arrived (see TierSlack.delayOf). */
  slackMark: number;
  /** It chose to wait for an earlier endpoint over a ready later one (reported once). */
  waitChosen: boolean;
  /** The endpoints it is parked on (to count stale entries when it leaves). */
  parkedOn: readonly string[];
  prev: Waiter | undefined;
  next: Waiter | undefined;
}

/** A new request's waiter, not yet placed: `seq`-th to arrive, of tier `rank`, at `enqueuedAt`. */
export function newWaiter(
  seq: number,
  rank: number,
  request: TokenRequest,
  enqueuedAt: number,
  agingMs: number,
  resolve: (d: TokenDecision) => void,
  reject: (e: unknown) => void,
): Waiter {
  return {
    seq,
    rank,
    order: servingKey(rank, enqueuedAt, agingMs),
    request,
    enqueuedAt,
    resolve,
    reject,
    state: 'new',
    parkVersion: 0,
    slackMark: 0,
    waitChosen: false,
    parkedOn: [],
    prev: undefined,
    next: undefined,
  };
}

/** Serving order: the serving key (tier rank, or aged deadline), then arrival. */
export function servedBefore(a: Waiter, b: Waiter): boolean {
  return a.order < b.order || (a.order === b.order && a.seq < b.seq);
}

/**
 * The serving key of a request of tier `rank` enqueued at `enqueuedAt` (see {@link Waiter.order}). Without aging
 * (`agingMs` infinite) it is the rank: strict tier priority, FIFO inside a tier. With aging, a request of a lower
 * tier is served before a higher tier's request that arrived more than `agingMs` per tier between them later: a
 * lower tier waits at most `agingMs` per tier above it beyond what a higher tier would.
 *
 * @example
 * ```ts
 * servingKey(2, 10_000, 1_500); // 13 000: an ops request queued at 10 s goes before an incident one queued after 13 s
 * servingKey(2, 10_000, Infinity); // 2: strict priority
 * ```
 */
export function servingKey(rank: number, enqueuedAt: number, agingMs: number): number {
  return Number.isFinite(agingMs) ? enqueuedAt + rank * agingMs : rank;
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
