import type { TimerHeap } from '../clock/timer-heap.ts';
import type { EndpointRegistry } from '../health/endpoint-registry.ts';
import { EndpointWaitList } from './endpoint-wait-list.ts';
import type { TierSlack } from './tier-slack.ts';
import { servedBefore, type Waiter, WaiterFifo } from './waiter.ts';

/**
 * Where the waiting requests of a `MemoryTokenScheduler` are: each in its tier's FIFO, or parked on every
 * endpoint of its chain until one of them refills (a wake-up on the timer heap) or a call on it ends; and which
 * endpoints woke since they were last looked at. The scheduler decides who goes; this keeps their places (see the
 * scheduler for the costs).
 *
 * @example
 * ```ts
 * const queues = new WaiterQueues(tiers.length, Infinity, endpoints, timers, (id) => scheduler.wake(id));
 * queues.enqueue(w);
 * const next = queues.bestCandidate();
 * ```
 */
export class WaiterQueues {
  readonly #fifos: WaiterFifo[];
  readonly #lists = new Map<string, EndpointWaitList>();
  /** Endpoints that may be ready for their parked waiters. */
  readonly #awake = new Set<string>();
  /** Every waiting request (for views). */
  readonly #waiting = new Set<Waiter>();
  readonly #agingMs: number;
  readonly #endpoints: EndpointRegistry;
  readonly #timers: TimerHeap;
  /** An endpoint's wake-up fired: its scheduler looks at its parked waiters again. */
  readonly #wake: (endpointId: string) => void;
  /** The `slack` tier policy, or undefined for strict tier order. */
  readonly #slack: TierSlack | undefined;

  /**
   * `tiers`: the known tiers (one more FIFO holds the unknown ones); `agingMs`: the scheduler's tier aging; `slack`:
   * the slack policy's state (undefined: strict tier order).
   */
  constructor(
    tiers: number,
    agingMs: number,
    endpoints: EndpointRegistry,
    timers: TimerHeap,
    wake: (endpointId: string) => void,
    slack?: TierSlack,
  ) {
    this.#fifos = Array.from({ length: tiers + 1 }, () => new WaiterFifo());
    this.#agingMs = agingMs;
    this.#endpoints = endpoints;
    this.#timers = timers;
    this.#wake = wake;
    this.#slack = slack;
  }

  /** Every waiting request, wherever it waits. */
  get waiting(): ReadonlySet<Waiter> {
    return this.#waiting;
  }

  /** `w` is waiting (not yet placed: it may be decided at once). */
  add(w: Waiter): void {
    this.#waiting.add(w);
  }

  /** `w` joins the end of its tier's FIFO. */
  enqueue(w: Waiter): void {
    this.#fifos[w.rank]!.push(w);
    this.#slack?.enqueued(w);
  }

  /**
   * The waiter served next: the best of the tiers' heads and the woken endpoints' tops; with the slack policy, the
   * waiter on the critical path of the work left instead, unless a request of a higher tier it would pass has been
   * delayed by passes `maxDelayMs` already. `tokens`: the scheduler's limit. The caller decides the waiter it gets.
   */
  bestCandidate(now: number, tokens: number): Waiter | undefined {
    const best = this.#inTierOrder();
    const slack = this.#slack;
    if (!slack || !best) return best;
    const critical = slack.candidate(tokens);
    const pass =
      critical !== undefined &&
      critical !== best &&
      servedBefore(best, critical) &&
      this.#passesNoneDue(slack, critical, now);
    const next = pass ? critical : best;
    slack.picked(next, now, pass && best.rank < critical.rank);
    return next;
  }

  /**
   * Whether serving `w` now passes over no waiter of a higher tier that passes have delayed the slack bound already.
   * Only a waiter that tier order (with its aging) serves before `w` is passed over; a tier's FIFO head arrived first,
   * so it is the most delayed of its tier; a woken endpoint's parked waiters compete too.
   */
  #passesNoneDue(slack: TierSlack, w: Waiter, now: number): boolean {
    const due = (h: Waiter | undefined) =>
      h !== undefined && h.rank < w.rank && servedBefore(h, w) && slack.delayOf(h, now) >= slack.maxDelayMs;
    for (let rank = 0; rank < w.rank; rank++) if (due(this.#fifos[rank]!.head)) return false;
    for (const id of this.#awake) if (due(this.#lists.get(id)?.top())) return false;
    return true;
  }

  /**
   * Whether a request of tier `rank` may pass over the higher tiers once more: none of their waiters that could be
   * served now has been delayed by passes the slack bound already.
   */
  mayPass(rank: number, now: number): boolean {
    const slack = this.#slack;
    if (!slack) return false;
    const due = (h: Waiter | undefined) =>
      h !== undefined && h.rank < rank && slack.delayOf(h, now) >= slack.maxDelayMs;
    for (let r = 0; r < rank; r++) if (due(this.#fifos[r]!.head)) return false;
    for (const id of this.#awake) if (due(this.#lists.get(id)?.top())) return false;
    return true;
  }

  /** Whether a request of a tier above `rank` waits in a FIFO or on a woken endpoint. */
  higherTierWaiting(rank: number): boolean {
    for (let r = 0; r < rank; r++) if (this.#fifos[r]!.head) return true;
    for (const id of this.#awake) {
      const top = this.#lists.get(id)?.top();
      if (top && top.rank < rank) return true;
    }
    return false;
  }

  /** The best of the tiers' heads and the woken endpoints' tops, in tier (or aged) order. */
  #inTierOrder(): Waiter | undefined {
    let best: Waiter | undefined;
    // A FIFO is in serving order (its keys grow with arrival), so only heads compete: without aging the first
    // non-empty tier wins; with aging, the head with the smallest key among the tiers.
    for (const fifo of this.#fifos) {
      const head = fifo.head;
      if (!head) continue;
      if (!best || servedBefore(head, best)) best = head;
      if (this.#agingMs === Number.POSITIVE_INFINITY) break;
    }
    for (const id of this.#awake) {
      const top = this.#lists.get(id)?.top();
      if (!top) this.#awake.delete(id);
      else if (!best || servedBefore(top, best)) best = top;
    }
    return best;
  }

  /** Parks `w` on every endpoint of its chain; each wakes it by its refill/cooldown deadline or a call ending on it. */
  park(w: Waiter, ids: readonly string[], now: number): void {
    this.#leave(w);
    w.state = 'parked';
    w.parkVersion++;
    w.parkedOn = ids;
    for (const id of ids) {
      let list = this.#lists.get(id);
      if (!list) {
        list = new EndpointWaitList();
        this.#lists.set(id, list);
      }
      list.park(w);
      // `w` was the best candidate, so it now heads every awake list it joined, and none of them is ready for it.
      this.#awake.delete(id);
      const r = this.#endpoints.get(id)?.health.readiness(now, w.request.estimatedTokens);
      if (r && r.cause !== 'concurrency') this.#armWake(id, list, r.until);
    }
  }

  /** The endpoint may be ready for its parked waiters: they compete again. */
  markAwake(endpointId: string): void {
    const list = this.#lists.get(endpointId);
    if (list && !list.empty) this.#awake.add(endpointId);
  }

  /** Every endpoint with parked waiters may be ready for them. */
  markAllAwake(): void {
    for (const id of this.#lists.keys()) this.markAwake(id);
  }

  /** `w` was decided (or withdrawn): it leaves its place and waits no more. */
  finish(w: Waiter): void {
    this.#leave(w);
    w.state = 'done';
    this.#waiting.delete(w);
  }

  /** Drops every armed wake-up (the scheduler closed). */
  cancelWakes(): void {
    for (const list of this.#lists.values()) list.timer?.cancel();
  }

  #armWake(id: string, list: EndpointWaitList, at: number): void {
    if (list.timer && list.timer.at <= at) return;
    list.timer?.cancel();
    list.timer = this.#timers.schedule(at, () => {
      list.timer = undefined;
      this.#wake(id);
    });
  }

  /** Takes `w` out of its FIFO or its parked lists (those entries go stale). */
  #leave(w: Waiter): void {
    if (w.state === 'fifo') {
      this.#fifos[w.rank]!.remove(w);
      w.state = 'new';
      this.#slack?.left(w);
    } else if (w.state === 'parked') {
      w.parkVersion++;
      for (const id of w.parkedOn) this.#lists.get(id)?.markStale();
      w.parkedOn = [];
    }
    w.state = 'new';
  }
}
