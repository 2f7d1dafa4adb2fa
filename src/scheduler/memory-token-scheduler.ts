import type { Clock } from '../clock/clock.ts';
import type { CallSettlement } from '../health/endpoint-health.ts';
import type { EndpointRegistry, Selection } from '../health/endpoint-registry.ts';
import type { RetryBudget } from '../resilience/retry-budget.ts';
import { EndpointWaitList } from './endpoint-wait-list.ts';
import { LeaseBook } from './lease-book.ts';
import { ProbeQueue } from './probe-queue.ts';
import type { TimerHeap } from '../clock/timer-heap.ts';
import {
  acquireTicket,
  type Grant,
  SchedulerClosedError,
  type SchedulerReport,
  type TokenDecision,
  type TokenRequest,
  type TokenScheduler,
  type TokenTicket,
  type TokenView,
} from './token-scheduler.ts';
import { servedBefore, servingKey, type Waiter, WaiterFifo } from './waiter.ts';

/** Options of a {@link MemoryTokenScheduler}. */
export interface MemoryTokenSchedulerOptions {
  readonly clock: Clock;
  /** The runtime's one timer heap (lease overruns, endpoint wake-ups). */
  readonly timers: TimerHeap;
  /** Endpoints and their health: which endpoint of a chain may take a call now. */
  readonly endpoints: EndpointRegistry;
  /** Tokens: upstream calls in flight at once. */
  readonly limit: number;
  /** Tiers, highest priority first. A request of an unknown tier is served after every known one. */
  readonly tiers: readonly string[];
  /**
   * Tier aging, ms: a waiting request moves up one tier for every `tierAgingMs` it has waited, so a request of
   * tier k is served before one of tier 0 that arrived more than k × `tierAgingMs` after it (a bound on how long a
   * lower tier starves). Default `Infinity`: strict tier priority, FIFO inside a tier.
   *
   * @example
   * ```ts
   * new MemoryTokenScheduler({ ...options, tiers: ['incident', 'analysis', 'ops'], tierAgingMs: 1_000 });
   * ```
   */
  readonly tierAgingMs?: number;
  /** A grant not released after this long has its signal aborted, ms. */
  readonly leaseMs: number;
  /** After aborting an overrun lease, how long the holder has to give the token back before it is taken, ms. */
  readonly reclaimGraceMs: number;
  /** Retries are charged here when granted; a spent budget denies them. Default: none (retries unlimited). */
  readonly budget?: RetryBudget;
  /** Endpoint ids a request may use, in order. Default: its chain's endpoints. */
  readonly endpointsFor?: (request: TokenRequest) => readonly string[];
  readonly onReport?: (report: SchedulerReport) => void;
  /** A holder ignored its lease's abort for `reclaimGraceMs` and its token was taken back anyway. */
  readonly onForcedReclaim?: (grant: Grant) => void;
}

/**
 * The in-memory {@link TokenScheduler}: one process, one quota. The cost of an event does not grow with the
 * number of waiters beyond O(log n):
 * - a FIFO per tier (linked list): enqueue and withdrawal O(1);
 * - a request whose chain is paced or at its concurrency cap is parked on each endpoint of its chain
 *   (a heap per endpoint) and looked at again only when one of them refills (a deadline in the timer heap)
 *   or a call on it ends; it never holds back a request whose endpoint is free (no head-of-line blocking);
 * - each grant looks at the best of the first waiter of each tier and the first parked waiter of each
 *   endpoint that woke: O(tiers + endpoints), independent of how many wait;
 * - with `tierAgingMs`, a request's serving key is `enqueuedAt + rank × tierAgingMs`, fixed at enqueue, so the
 *   FIFOs and heaps stay ordered while requests age (same costs);
 * - HALF-OPEN probes are served before every tier.
 *
 * @example
 * ```ts
 * const scheduler = new MemoryTokenScheduler({ clock, timers, endpoints, limit: 3, tiers: ['analysis', 'ops'],
 *   leaseMs: 120_000, reclaimGraceMs: 5_000, budget });
 * const d = await scheduler.acquire(request, signal);
 * ```
 */
export class MemoryTokenScheduler implements TokenScheduler {
  readonly #o: MemoryTokenSchedulerOptions;
  readonly #fifos: WaiterFifo[];
  readonly #lists = new Map<string, EndpointWaitList>();
  /** Endpoints that may be ready for their parked waiters. */
  readonly #awake = new Set<string>();
  readonly #probes = new ProbeQueue();
  readonly #leases: LeaseBook;
  /** Every waiting request (for views). */
  readonly #waiting = new Set<Waiter>();
  #limit: number;
  readonly #agingMs: number;
  #seq = 0;
  #idleWaiters: Array<() => void> = [];
  #pumping = false;
  #pumpAgain = false;
  #closed = false;

  constructor(options: MemoryTokenSchedulerOptions) {
    this.#o = options;
    this.#limit = Math.max(1, Math.floor(options.limit));
    const aging = options.tierAgingMs ?? Number.POSITIVE_INFINITY;
    if (!(aging > 0))
      throw new RangeError(
        `tierAgingMs ${String(aging)}: set a duration > 0 ms, or Infinity for strict tiers`,
      );
    this.#agingMs = aging;
    this.#fifos = Array.from({ length: options.tiers.length + 1 }, () => new WaiterFifo());
    this.#leases = new LeaseBook({
      clock: options.clock,
      timers: options.timers,
      leaseMs: options.leaseMs,
      reclaimGraceMs: options.reclaimGraceMs,
      release: (id, outcome) => this.release(id, outcome),
      onReclaimed: (g, at) =>
        options.onReport?.({
          type: 'token.reclaimed',
          at,
          holder: g.holder,
          endpointId: g.endpointId,
          leaseId: g.leaseId,
        }),
      onCancellationIgnored: (g) => {
        options.onForcedReclaim?.(g);
        const provider = options.endpoints.get(g.endpointId)?.health.descriptor.provider ?? 'openai';
        const message = `the call ignored the cancellation of its overrun lease for ${options.reclaimGraceMs} ms; its token was taken back`;
        this.release(g.leaseId, {
          kind: 'fault',
          fault: { kind: 'timeout', provider, message, endpointId: g.endpointId },
        });
      },
    });
  }

  acquire(request: TokenRequest, signal?: AbortSignal): Promise<TokenDecision> {
    return acquireTicket(this.#closed, () => this.request(request), signal);
  }

  request(request: TokenRequest): TokenTicket {
    let w!: Waiter;
    const decision = new Promise<TokenDecision>((resolve, reject) => {
      const known = this.#o.tiers.indexOf(request.tier);
      const rank = known < 0 ? this.#o.tiers.length : known;
      const enqueuedAt = this.#o.clock.now();
      w = {
        seq: ++this.#seq,
        rank,
        order: servingKey(rank, enqueuedAt, this.#agingMs),
        request,
        enqueuedAt,
        resolve,
        reject,
        state: 'new',
        parkVersion: 0,
        parkedOn: [],
        prev: undefined,
        next: undefined,
      };
    });
    const ticket = new Ticket(this, w, decision);
    if (this.#closed) {
      w.state = 'done';
      w.reject(new SchedulerClosedError());
      return ticket;
    }
    this.#waiting.add(w);
    // With every token held, a newcomer that must cool or be refused hears it now rather than after a wait.
    if (this.#leases.size >= this.#limit) {
      const now = this.#o.clock.now();
      const sel = this.#select(request, now);
      if (!keepsPlace(sel, now, request)) {
        this.#decide(w, now);
        return ticket;
      }
    }
    this.#fifos[w.rank]!.push(w);
    this.#pump();
    return ticket;
  }

  tryGrant(request: TokenRequest): Grant | undefined {
    // Anyone waiting (a request, a parked one, a probe) is served first: the newcomer goes through `request`.
    if (
      this.#closed ||
      this.#pumping ||
      request.retry ||
      this.#leases.size >= this.#limit ||
      this.#waiting.size > 0 ||
      this.#probes.size > 0
    )
      return undefined;
    const now = this.#o.clock.now();
    const sel = this.#select(request, now);
    if (sel.kind !== 'ready') return undefined;
    if (request.attempt === 0) this.#o.budget?.recordCall(now);
    return this.#open(request, sel.endpointId, sel.index, now, now);
  }

  acquireProbe(endpointId: string, signal?: AbortSignal): Promise<Grant> {
    if (this.#closed) return Promise.reject(new SchedulerClosedError());
    const grant = this.#probes.wait(endpointId, signal);
    this.#pump();
    return grant;
  }

  claim(leaseId: string, onReclaim?: (reason: unknown) => void): Grant | undefined {
    return this.#leases.claim(leaseId, onReclaim);
  }

  releaseUnclaimed(leaseId: string): void {
    if (!this.#leases.isClaimed(leaseId)) this.release(leaseId, { kind: 'unused' });
  }

  release(leaseId: string, outcome: CallSettlement): void {
    const grant = this.#leases.close(leaseId);
    if (!grant) return;
    const now = this.#o.clock.now();
    // Held until the release is reported: the health hook below wakes waiters, and a grant must not be
    // reported before the release that made room for it.
    const pumping = this.#pumping;
    this.#pumping = true;
    try {
      // A probe's outcome is recorded by the probe itself (HALF-OPEN rules); a call's by the endpoint's health.
      if (!grant.probe)
        this.#o.endpoints.get(grant.endpointId)?.health.settle(outcome, grant.estimatedTokens, now);
      this.#o.onReport?.({
        type: 'token.released',
        at: now,
        agent: grant.holder,
        endpointId: grant.endpointId,
        leaseId,
        held: this.#leases.size,
      });
      this.#markAwake(grant.endpointId);
    } finally {
      this.#pumping = pumping;
    }
    this.#pump();
    if (this.#leases.size === 0 && this.#idleWaiters.length > 0)
      for (const resolve of this.#idleWaiters.splice(0)) resolve();
  }

  whenIdle(signal?: AbortSignal): Promise<void> {
    if (this.#leases.size === 0 || signal?.aborted) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const done = () => {
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.#idleWaiters.push(done);
      signal?.addEventListener('abort', done, { once: true });
    });
  }

  setLimit(limit: number): void {
    if (!(Number.isFinite(limit) && limit >= 1))
      throw new RangeError(`token limit ${String(limit)}: set a whole number ≥ 1`);
    this.#limit = Math.floor(limit);
    this.#pump();
  }

  wake(endpointId: string): void {
    this.#markAwake(endpointId);
    this.#pump();
  }

  rescan(): void {
    for (const id of this.#lists.keys()) this.#markAwake(id);
    this.#pump();
  }

  view(): TokenView {
    const queue = [...this.#waiting].sort((a, b) => (servedBefore(a, b) ? -1 : 1));
    return {
      limit: this.#limit,
      held: this.#leases.size,
      holders: [...this.#leases.grants()].map((g) => ({
        holder: g.holder,
        endpointId: g.endpointId,
        tier: g.tier,
      })),
      queue: queue.map((w) => ({ agent: w.request.holder, tier: w.request.tier })),
    };
  }

  close(reason: unknown = new SchedulerClosedError()): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const w of [...this.#waiting]) this.#withdraw(w, reason);
    this.#probes.rejectAll(reason);
    this.#leases.abortAll(reason);
    for (const list of this.#lists.values()) list.timer?.cancel();
  }

  /** Grants while tokens are free: probes first, then the best of the tiers' heads and the woken endpoints' tops. */
  #pump(): void {
    if (this.#pumping) {
      this.#pumpAgain = true;
      return;
    }
    this.#pumping = true;
    try {
      do {
        this.#pumpAgain = false;
        while (!this.#closed && this.#leases.size < this.#limit) {
          const now = this.#o.clock.now();
          if (this.#probes.size === 0 || !this.#probes.serveNext((id) => this.#grantProbe(id, now))) {
            const w = this.#bestCandidate();
            if (!w) break;
            this.#decide(w, now);
          }
        }
      } while (this.#pumpAgain);
    } finally {
      this.#pumping = false;
    }
  }

  #bestCandidate(): Waiter | undefined {
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

  /** Looks at one waiter: grant, park, cool or deny. Only called with a token free (or for a must-cool newcomer). */
  #decide(w: Waiter, now: number): void {
    const { request } = w;
    const budget = this.#o.budget;
    // The budget limits retries, not fallbacks: once it is spent, a retry may still go where it was never tried.
    const spent = request.retry && budget !== undefined && !budget.canRetry(now);
    const sel = this.#select(request, now, spent);
    if (sel.kind === 'none') {
      // Spent retries explain it only if an endpoint the call may still use was left out for them.
      const unspent = spent ? this.#select(request, now) : sel;
      this.#deny(w, now, unspent.kind === 'none' ? unspent.reason : BUDGET_SPENT);
    } else if (sel.kind === 'ready') {
      // A retry is charged when it is actually sent, and only on an endpoint it failed on: a storm cannot multiply
      // upstream traffic, and a fallback to an endpoint never tried is not a retry.
      const { tried } = request;
      const charged = request.retry && (!tried?.length || tried.includes(sel.endpointId));
      if (charged && budget && !budget.tryRetry(now)) this.#deny(w, now, BUDGET_SPENT);
      else {
        if (request.attempt === 0) this.#o.budget?.recordCall(now);
        this.#grant(w, sel.endpointId, sel.index, now);
      }
    } else if (keepsPlace(sel, now, request)) this.#park(w, this.#usableBy(request, spent), now);
    else if (!waitsFor(sel, now, request)) this.#deny(w, now, beyondMaxWait(sel, now, request));
    else {
      const { endpointId, cause } = sel;
      // A breaker waiting for its probe has no known end: cool until the next look or the max wait, whichever is
      // first (the probe's close wakes cooling agents at once).
      const until = sel.probing ? Math.min(sel.until, now + waitLeft(request)) : sel.until;
      this.#settle(w, { kind: 'cool', endpointId, until, cause, at: now });
      this.#o.onReport?.({ type: 'token.wait', at: now, agent: request.holder, endpointId, until, cause });
    }
  }

  /** Parks `w` on every endpoint of its chain; each wakes it by its refill/cooldown deadline or a call ending on it. */
  #park(w: Waiter, ids: readonly string[], now: number): void {
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
      const r = this.#o.endpoints.get(id)?.health.readiness(now, w.request.estimatedTokens);
      if (r && r.cause !== 'concurrency') this.#armWake(id, list, r.until);
    }
  }

  #armWake(id: string, list: EndpointWaitList, at: number): void {
    if (list.timer && list.timer.at <= at) return;
    list.timer?.cancel();
    list.timer = this.#o.timers.schedule(at, () => {
      list.timer = undefined;
      this.wake(id);
    });
  }

  #markAwake(endpointId: string): void {
    const list = this.#lists.get(endpointId);
    if (list && !list.empty) this.#awake.add(endpointId);
  }

  #grant(w: Waiter, endpointId: string, index: number, now: number): void {
    this.#open(w.request, endpointId, index, now, w.enqueuedAt, w);
  }

  /** Opens a lease for `request` on `endpointId` (settling `w`, if it waited) and reports the grant. */
  #open(
    request: TokenRequest,
    endpointId: string,
    index: number,
    now: number,
    askedAt: number,
    w?: Waiter,
  ): Grant {
    const { holder, tier, estimatedTokens } = request;
    const grant = this.#leases.open({ holder, tier, endpointId, index, estimatedTokens, probe: false }, now);
    this.#o.endpoints.get(endpointId)?.health.take(estimatedTokens, now);
    if (w) this.#settle(w, { kind: 'granted', grant });
    this.#o.onReport?.({
      type: 'token.granted',
      at: now,
      agent: holder,
      tier,
      endpointId,
      leaseId: grant.leaseId,
      waitedMs: now - askedAt,
      held: this.#leases.size,
    });
    return grant;
  }

  #grantProbe(endpointId: string, now: number): Grant {
    const grant = this.#leases.open(
      { holder: `probe:${endpointId}`, tier: 'probe', endpointId, index: 0, estimatedTokens: 0, probe: true },
      now,
    );
    this.#o.onReport?.({ type: 'probe.started', at: now, endpointId, leaseId: grant.leaseId });
    return grant;
  }

  #deny(w: Waiter, now: number, reason: string): void {
    this.#settle(w, { kind: 'denied', reason, at: now });
    this.#o.onReport?.({ type: 'token.denied', at: now, agent: w.request.holder, reason });
  }

  #settle(w: Waiter, d: TokenDecision): void {
    this.#finish(w);
    w.resolve(d);
  }

  /** A ticket's withdrawal. @internal */
  withdrawWaiter(w: Waiter, reason: unknown): void {
    // Most withdrawals come after the decision (a no-op): no Error (and its stack) is made for those.
    if (w.state !== 'done') this.#withdraw(w, reason ?? new Error('the token request was withdrawn'));
  }

  #withdraw(w: Waiter, reason: unknown): void {
    if (w.state === 'done') return;
    this.#finish(w);
    w.reject(reason);
  }

  #finish(w: Waiter): void {
    this.#leave(w);
    w.state = 'done';
    this.#waiting.delete(w);
  }

  /** Takes `w` out of its FIFO or its parked lists (those entries go stale). */
  #leave(w: Waiter): void {
    if (w.state === 'fifo') this.#fifos[w.rank]!.remove(w);
    else if (w.state === 'parked') {
      w.parkVersion++;
      for (const id of w.parkedOn) this.#lists.get(id)?.markStale();
      w.parkedOn = [];
    }
    w.state = 'new';
  }

  /** The endpoint `request` may take now, or when; `spent`: its retries are spent (it may go only where untried). */
  #select(request: TokenRequest, now: number, spent = false): Selection {
    return this.#o.endpoints.select(
      this.#endpointsOf(request),
      now,
      request.estimatedTokens,
      skipOf(request, spent),
    );
  }

  /** The endpoints of `request`'s chain it may be granted on (a parked request waits on these only). */
  #usableBy(request: TokenRequest, spent: boolean): readonly string[] {
    const ids = this.#endpointsOf(request);
    const skip = skipOf(request, spent);
    return skip ? ids.filter((id) => !skip.includes(id)) : ids;
  }

  #endpointsOf(request: TokenRequest): readonly string[] {
    return this.#o.endpointsFor?.(request) ?? this.#o.endpoints.chain(request.chain);
  }
}

const BUDGET_SPENT =
  'retry budget spent: too many retries in the last window, and no endpoint of the chain this call has not tried is left; answering degraded instead';

/** The endpoints `request` must not be granted on: its own `skip`, and every endpoint it tried once retries are `spent`. */
function skipOf(request: TokenRequest, spent: boolean): readonly string[] | undefined {
  const { skip, tried } = request;
  if (!spent || !tried?.length) return skip?.length ? skip : undefined;
  return skip?.length ? [...skip, ...tried] : tried;
}

/** Waits that end by themselves soon (a refill, a free slot): the request keeps its place instead of cooling. */
function isRoomWait(cause: string): boolean {
  return cause === 'pacing' || cause === 'concurrency';
}

/** Whether a request keeps a place in the queue (ready, or waiting for room within its max wait). */
function keepsPlace(sel: Selection, now: number, request: TokenRequest): boolean {
  if (sel.kind === 'ready') return true;
  return sel.kind === 'wait' && isRoomWait(sel.cause) && sel.until - now <= waitLeft(request);
}

/** What is left of `request`'s max wait after the cooling it already did since its last call, ms. */
function waitLeft(request: TokenRequest): number {
  return request.maxWaitMs - (request.cooledMs ?? 0);
}

/**
 * Whether `request` may cool for `sel`: its earliest endpoint comes back within what is left of the max wait. A
 * probe's outcome has no known time: while one of its endpoints waits for its probe, any max wait left is enough.
 */
function waitsFor(sel: Extract<Selection, { kind: 'wait' }>, now: number, request: TokenRequest): boolean {
  const left = waitLeft(request);
  return sel.until - now <= left || (sel.probing === true && left > 0);
}

function beyondMaxWait(
  sel: Extract<Selection, { kind: 'wait' }>,
  now: number,
  request: TokenRequest,
): string {
  const { maxWaitMs, cooledMs } = request;
  const spent = cooledMs ? `, ${Math.round(cooledMs)} ms of it already spent cooling` : '';
  const probe = sel.probing ? '; a breaker of the chain waits for its probe' : '';
  return `every endpoint of chain "${request.chain}" is unavailable beyond max wait ${maxWaitMs} ms${spent} (earliest: ${sel.endpointId}, ${sel.cause}, in ${Math.round(sel.until - now)} ms${probe})`;
}

/** A request's handle for its caller (a class: one is made per request, on the hot path). */
class Ticket implements TokenTicket {
  readonly decision: Promise<TokenDecision>;
  readonly #scheduler: MemoryTokenScheduler;
  readonly #waiter: Waiter;
  constructor(scheduler: MemoryTokenScheduler, waiter: Waiter, decision: Promise<TokenDecision>) {
    this.#scheduler = scheduler;
    this.#waiter = waiter;
    this.decision = decision;
  }
  withdraw(reason?: unknown): void {
    this.#scheduler.withdrawWaiter(this.#waiter, reason);
  }
}
