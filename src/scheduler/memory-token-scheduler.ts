import type { CallSettlement } from '../health/endpoint-health.ts';
import type { LeaseBook } from './lease-book.ts';
import {
  type MemoryTokenSchedulerOptions,
  schedulerLeaseBook,
  tierOrderOf,
} from './memory-token-scheduler-options.ts';
import { ProbeQueue } from './probe-queue.ts';
import {
  acquireTicket,
  type Grant,
  SchedulerClosedError,
  type TokenDecision,
  type TokenRequest,
  type TokenScheduler,
  type TokenTicket,
  type TokenView,
} from './token-scheduler.ts';
import { ChainChoice, routeWaitReport } from './chain-choice.ts';
import { TierSlack } from './tier-slack.ts';
import { Ticket } from './token-ticket.ts';
import { BUDGET_SPENT, beyondMaxWait, keepsPlace, waitLeft, waitsFor } from './wait-rules.ts';
import { newWaiter, servedBefore, type Waiter } from './waiter.ts';
import { WaiterQueues } from './waiter-queues.ts';

export type { MemoryTokenSchedulerOptions } from './memory-token-scheduler-options.ts';

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
  /** Where every waiting request is: its tier's FIFO, or parked on its chain's endpoints. */
  readonly #queues: WaiterQueues;
  readonly #probes = new ProbeQueue();
  readonly #leases: LeaseBook;
  /** The slack tier policy's state; undefined under strict tier order. */
  readonly #slack: TierSlack | undefined;
  readonly #choice: ChainChoice;
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
    const { agingMs: aging, slackMs } = tierOrderOf(options);
    this.#agingMs = aging;
    this.#choice = new ChainChoice(options.endpoints, options.endpointsFor);
    this.#slack =
      slackMs === undefined
        ? undefined
        : new TierSlack(slackMs, options.tiers.length + 1, options.timers, () => this.#pump());
    this.#queues = new WaiterQueues(
      options.tiers.length,
      aging,
      options.endpoints,
      options.timers,
      (id) => this.wake(id),
      this.#slack,
    );
    this.#leases = schedulerLeaseBook(options, (id, outcome) => this.release(id, outcome));
  }

  acquire(request: TokenRequest, signal?: AbortSignal): Promise<TokenDecision> {
    return acquireTicket(this.#closed, () => this.request(request), signal);
  }

  request(request: TokenRequest): TokenTicket {
    let w!: Waiter;
    const decision = new Promise<TokenDecision>((resolve, reject) => {
      const rank = this.#rankOf(request.tier);
      w = newWaiter(++this.#seq, rank, request, this.#o.clock.now(), this.#agingMs, resolve, reject);
    });
    const ticket = new Ticket(this, w, decision);
    if (this.#closed) {
      w.state = 'done';
      w.reject(new SchedulerClosedError());
      return ticket;
    }
    this.#queues.add(w);
    // A token kept for this holder (it released one a moment ago, on the critical path): decided now, on it.
    if (this.#slack?.asked(w)) {
      this.#handOver(w);
      this.#pump();
      return ticket;
    }
    // With every token held, a newcomer that must cool or be refused hears it now rather than after a wait.
    if (this.#taken >= this.#limit) {
      const now = this.#o.clock.now();
      const sel = this.#choice.select(request, now);
      if (!keepsPlace(sel, now, request)) {
        this.#decide(w, now);
        return ticket;
      }
    }
    this.#queues.enqueue(w);
    this.#pump();
    return ticket;
  }

  tryGrant(request: TokenRequest): Grant | undefined {
    // A token kept for this holder is its to use now (no one else could have it).
    this.#slack?.tookAtOnce(request.holder);
    // Anyone waiting (a request, a parked one, a probe) is served first: the newcomer goes through `request`.
    if (
      this.#closed ||
      this.#pumping ||
      request.retry ||
      this.#taken >= this.#limit ||
      this.#queues.waiting.size > 0 ||
      this.#probes.size > 0
    )
      return undefined;
    const now = this.#o.clock.now();
    const sel = this.#choice.select(request, now);
    if (sel.kind !== 'ready') return undefined;
    if (request.attempt === 0) this.#o.budget?.recordCall(now);
    return this.#open(request, sel.endpointId, sel.index, now, now);
  }

  acquireProbe(endpointId: string, signal?: AbortSignal): Promise<Grant> {
    if (this.#closed) return Promise.reject(new SchedulerClosedError());
    const grant = this.#probes.wait(endpointId, signal);
    // A probe goes before every tier: a token kept for a critical agent's next ask is its now.
    this.#slack?.dropKept();
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
    this.#slack?.released(
      grant.holder,
      now,
      this.#limit,
      // Never kept from a probe waiting (probes go before every tier) or past the slack promise.
      () => !grant.probe && this.#probes.size === 0 && this.#queues.mayPass(this.#rankOf(grant.tier), now),
    );
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
      this.#queues.markAwake(grant.endpointId);
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
    this.#queues.markAwake(endpointId);
    this.#pump();
  }

  rescan(): void {
    this.#queues.markAllAwake();
    this.#pump();
  }

  view(): TokenView {
    const queue = [...this.#queues.waiting].sort((a, b) => (servedBefore(a, b) ? -1 : 1));
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
    for (const w of [...this.#queues.waiting]) this.#withdraw(w, reason);
    this.#probes.rejectAll(reason);
    this.#slack?.dropKept();
    this.#leases.abortAll(reason);
    this.#queues.cancelWakes();
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
        while (!this.#closed && this.#taken < this.#limit) {
          const now = this.#o.clock.now();
          if (this.#probes.size === 0 || !this.#probes.serveNext((id) => this.#grantProbe(id, now))) {
            const w = this.#queues.bestCandidate(now, this.#limit);
            if (!w) break;
            this.#decide(w, now);
          }
        }
      } while (this.#pumpAgain);
    } finally {
      this.#pumping = false;
    }
  }

  /** Looks at one waiter: grant, park, cool or deny. Only called with a token free (or for a must-cool newcomer). */
  #decide(w: Waiter, now: number): void {
    const { request } = w;
    const budget = this.#o.budget;
    // The budget limits retries, not fallbacks: once it is spent, a retry may still go where it was never tried.
    const spent = request.retry && budget !== undefined && !budget.canRetry(now);
    const sel = this.#choice.select(request, now, spent);
    // Wait or switch: waiting for an earlier endpoint was chosen over a ready later one (said once per request).
    if (sel.kind === 'wait' && sel.instead && !w.waitChosen) {
      w.waitChosen = true;
      this.#o.onReport?.(routeWaitReport(sel, request.holder, now));
    }
    if (sel.kind === 'none') {
      // Spent retries explain it only if an endpoint the call may still use was left out for them.
      const unspent = spent ? this.#choice.select(request, now) : sel;
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
    } else if (keepsPlace(sel, now, request))
      this.#queues.park(w, this.#choice.usableBy(request, spent), now);
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
    if (w) {
      this.#slack?.granted(holder, now - askedAt);
      this.#settle(w, { kind: 'granted', grant });
    }
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
    this.#slack?.refused(w.request.holder);
    this.#settle(w, { kind: 'denied', reason, at: now });
    this.#o.onReport?.({ type: 'token.denied', at: now, agent: w.request.holder, reason });
  }

  #settle(w: Waiter, d: TokenDecision): void {
    this.#queues.finish(w);
    w.resolve(d);
  }

  /** A ticket's withdrawal. @internal */
  withdrawWaiter(w: Waiter, reason: unknown): void {
    // Most withdrawals come after the decision (a no-op): no Error (and its stack) is made for those.
    if (w.state !== 'done') this.#withdraw(w, reason ?? new Error('the token request was withdrawn'));
  }

  #withdraw(w: Waiter, reason: unknown): void {
    if (w.state === 'done') return;
    // Its ask was cancelled or its agent stopped: whatever it said it had left is not coming.
    this.#slack?.withdrawn(w.request.holder);
    this.#queues.finish(w);
    w.reject(reason);
  }

  /** Tokens held by calls and kept for hand-offs. */
  get #taken(): number {
    return this.#leases.size + (this.#slack?.kept ?? 0);
  }

  /** `w`'s holder takes the token kept for it: decided at once, a pass over any higher tier waiting. */
  #handOver(w: Waiter): void {
    const now = this.#o.clock.now();
    this.#slack?.picked(w, now, this.#queues.higherTierWaiting(w.rank));
    this.#decide(w, now);
  }

  #rankOf(tier: string): number {
    const known = this.#o.tiers.indexOf(tier);
    return known < 0 ? this.#o.tiers.length : known;
  }
}
