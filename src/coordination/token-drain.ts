import { type Grant, SchedulerClosedError, type TokenRequest } from '../scheduler/token-scheduler.ts';
import type { BackendGiveBacks } from './backend-give-backs.ts';
import type {
  GlobalAcquireResult,
  GlobalLease,
  RateAsk,
  RatePermit,
  RateTakeResult,
} from './coordination-backend.ts';
import { RATE_SLOTS } from './coordination-backend.ts';
import type { GlobalLeaseBook } from './global-lease-book.ts';
import type { Pending } from './pending-request.ts';
import type { ProbeClaims, ProbeQueue } from './probe-claims.ts';
import type { ProbeParking } from './probe-parking.ts';
import { permitDeadlineFrom, rateAsk } from './rate-permits.ts';
import type { SchedulerCore } from './scheduler-core.ts';

/**
 * The queue of local grants waiting for a global token, and the one loop (the drain) that takes tokens for its
 * head, one attempt at a time. Waiters are woken by the backend's notifications (a token given back) or when the
 * earliest lease expires, never by polling; a token busy in the pool is waited for with no max wait, as for a
 * token of one process. Only grants that keep arriving too late to use (past the lease's or the permit's deadline)
 * for a request's max wait deny it; a backend call that fails denies the whole queue (fail closed).
 */
export class TokenDrain implements ProbeQueue {
  readonly #core: SchedulerCore;
  readonly #leases: GlobalLeaseBook;
  readonly #giveBacks: BackendGiveBacks;
  readonly #parking: ProbeParking;
  readonly #claims: ProbeClaims;
  readonly #queue: Pending[] = [];
  #limit: number;
  #pumping = false;
  #pumpAgain = false;
  #wakeEpoch = 0;
  #retryTimer: ReturnType<typeof setTimeout> | undefined;

  constructor(
    core: SchedulerCore,
    parts: {
      readonly leases: GlobalLeaseBook;
      readonly giveBacks: BackendGiveBacks;
      readonly parking: ProbeParking;
      readonly claims: ProbeClaims;
    },
    limit: number,
  ) {
    this.#core = core;
    this.#leases = parts.leases;
    this.#giveBacks = parts.giveBacks;
    this.#parking = parts.parking;
    this.#claims = parts.claims;
    this.#limit = limit;
  }

  /** A local grant waits for its global token behind the queue. */
  enqueue(p: Pending): void {
    this.#queue.push(p);
    this.#pump();
  }

  serveFirst(p: Pending): void {
    this.#queue.unshift(p);
    this.#pump();
  }

  remove(p: Pending): void {
    const i = this.#queue.indexOf(p);
    if (i >= 0) this.#queue.splice(i, 1);
  }

  /** A token came back (here or elsewhere in the pool): a drain under way asks again at once. */
  woken(): void {
    this.#wakeEpoch++;
    this.#pump();
  }

  setLimit(limit: number): void {
    this.#limit = Math.floor(limit);
    this.#pump();
  }

  /** The requests queued here (local grants waiting for a global token), for the scheduler's view. */
  waiting(): Pending[] {
    return this.#queue.filter((p) => !p.done && p.request);
  }

  /** close(): the queue emptied, its requests the caller's to settle. */
  takeAll(): Pending[] {
    return this.#queue.splice(0);
  }

  /** close(): no drain is woken by the retry timer any more. */
  stopRetry(): void {
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
  }

  /** Takes global tokens for the queue's head while there are any; one attempt at a time. */
  #pump(): void {
    if (this.#core.closed() || this.#queue.length === 0) return;
    if (this.#pumping) {
      // A request queued while the drain was finishing (after its last look, before its end): it runs once more.
      this.#pumpAgain = true;
      return;
    }
    this.#pumping = true;
    this.#pumpAgain = false;
    void this.#drain().finally(() => {
      this.#pumping = false;
      if (this.#pumpAgain) {
        this.#pumpAgain = false;
        this.#pump();
      }
    });
  }

  async #drain(): Promise<void> {
    try {
      await this.#core.connect();
    } catch (e) {
      for (const p of this.#queue.splice(0)) this.#core.deny(p, e);
      this.#core.dropConnection();
      return;
    }
    while (!this.#core.closed()) {
      const p = this.#queue[0];
      if (!p) return;
      if (p.done) {
        this.#queue.shift();
        continue;
      }
      // Every request whose grants kept coming too late for its max wait answers now, not only the head.
      if (this.#denyOverdue()) continue;
      if (this.#claims.isStale(p)) {
        // The probe waited for a token long enough that its claim may run out: claim again (this process's own claim
        // is renewed) so it never goes beside another process's probe.
        const sentAt = this.#core.now();
        let mine: boolean;
        try {
          mine = await this.#core.backend.claimProbe(p.probeOf!, this.#core.leaseTtlMs);
        } catch (e) {
          this.#core.failed(e);
          this.#denyAll(e);
          return;
        }
        if (!this.#claims.reclaimed(p, mine, sentAt)) continue;
      }
      const epoch = this.#wakeEpoch;
      // The lease runs from when the backend granted it, at the latest when the request reached it: its deadline
      // counts from the sending, never from the (possibly late) reply.
      const sentAt = this.#core.now();
      let result: GlobalAcquireResult;
      try {
        result = await this.#core.backend.tryAcquire(this.#limit);
      } catch (e) {
        this.#core.failed(e);
        // Fail closed: nothing waits for a backend that is gone; the agents answer degraded.
        this.#denyAll(e);
        return;
      }
      this.#core.answered();
      if (result.ok) {
        const deadline = this.#usableUntil(p, result.lease, sentAt);
        if (deadline === undefined) continue;
        const ask = rateAsk(this.#core, p.grant!);
        let permit: RatePermit | undefined;
        let permitDeadline = Infinity;
        if (ask) {
          // The permit's slot is read by the backend after this: one slot from here is a safe (early) bound.
          permitDeadline = permitDeadlineFrom(this.#core.now(), ask);
          let rate: RateTakeResult;
          try {
            rate = await this.#core.backend.takeRate(ask);
          } catch (e) {
            this.#giveBacks.release(result.lease);
            this.#core.failed(e);
            // Fail closed, as for a token: no call goes without its window's permit.
            this.#core.deny(p, e);
            this.#denyAll(e);
            return;
          }
          permit = this.#permitted(p, result.lease, rate, ask, Math.min(deadline, permitDeadline));
          if (!permit) continue;
        }
        this.#granted(p, result.lease, deadline, permit, permitDeadline);
        continue;
      }
      // A token came back while we asked: ask again at once, else sleep until a wake-up or the earliest expiry.
      if (epoch !== this.#wakeEpoch) continue;
      this.#armRetry(result.retryInMs);
      return;
    }
  }

  /** Denies every queued request (fail closed). */
  #denyAll(e: unknown): void {
    for (const q of this.#queue.splice(0)) this.#core.deny(q, e);
  }

  /**
   * p's global token came back (asked for at `sentAt`): the lease's fence deadline if p may still use it; else
   * undefined, the token given back and p settled, queued again or handed back to the local scheduler.
   */
  #usableUntil(p: Pending, lease: GlobalLease, sentAt: number): number | undefined {
    // By identity: while the backend answered, p may have been withdrawn or a probe put in front of it.
    this.remove(p);
    if (p.done || this.#core.closed()) {
      this.#giveBacks.release(lease);
      return undefined;
    }
    const deadline = this.#leases.deadlineFrom(sentAt);
    if (this.#core.now() >= deadline) {
      // The grant came back too late to be used safely: give it back and ask again (the request keeps its place;
      // its max wait, counted from the first such grant, bounds the retries).
      this.#giveBacks.release(lease);
      this.#late(p);
      this.#queue.unshift(p);
      return undefined;
    }
    if (this.#cooledElsewhere(p)) {
      this.#giveBacks.release(lease);
      this.#resubmit(p);
      return undefined;
    }
    return deadline;
  }

  /**
   * The shared window answered p's ask: its permit if p may go with it (before `usableUntil`, the earlier of the
   * lease's and the permit's deadlines); else undefined, its token (and units) given back.
   */
  #permitted(
    p: Pending,
    lease: GlobalLease,
    rate: RateTakeResult,
    ask: RateAsk,
    usableUntil: number,
  ): RatePermit | undefined {
    if (p.done || this.#core.closed()) {
      this.#giveBacks.release(lease);
      if (rate.ok) this.#giveBacks.refund(rate.permit);
      // Closed while asking: p is in no queue close() saw, so it is settled here.
      if (!p.done) this.#core.withdraw(p, new SchedulerClosedError());
      return undefined;
    }
    if (!rate.ok) {
      this.#giveBacks.release(lease);
      this.#paced(p, rate.retryInMs);
      return undefined;
    }
    const permit = rate.permit;
    if (this.#core.now() >= usableUntil) {
      this.#giveBacks.release(lease);
      this.#giveBacks.refund(permit);
      this.#late(p);
      if (p.request) this.#queue.unshift(p);
      // A probe has no max wait: it asks again a slot later, not in a tight loop.
      else this.#parking.park(p, 'pace', ask.windowMs / RATE_SLOTS);
      return undefined;
    }
    return permit;
  }

  #armRetry(retryInMs: number | undefined): void {
    if (this.#retryTimer) clearTimeout(this.#retryTimer);
    // Max waits are runtime-clock ms, timers real ms; the earliest of the queue's wakes the pump to deny it.
    let untilDeadline = Infinity;
    for (const q of this.#queue)
      if (q.request && !q.done && q.lateSince !== undefined)
        untilDeadline = Math.min(untilDeadline, q.lateSince + this.#lateBound(q.request) - this.#core.now());
    const wait = Math.max(1, Math.min(retryInMs ?? this.#core.leaseTtlMs, untilDeadline));
    this.#retryTimer = setTimeout(() => {
      this.#retryTimer = undefined;
      this.#pump();
    }, wait);
    this.#retryTimer.unref?.();
  }

  /** The backend answered p with a grant too late to use: from the first such grant, its max wait runs. */
  #late(p: Pending): void {
    p.lateSince ??= this.#core.now();
  }

  /**
   * The backend's grants kept arriving too late to use for longer than its max wait (a backend that answers, but
   * never in time): it answers degraded. Tokens merely busy elsewhere are waited for, as in one process.
   */
  #overdue(p: Pending): boolean {
    return (
      p.request !== undefined &&
      p.lateSince !== undefined &&
      this.#core.now() - p.lateSince > this.#lateBound(p.request)
    );
  }

  /**
   * How long grants may keep arriving too late before the request is denied, real ms: its max wait, and at least
   * two lease TTLs. A late grant is the backend's real-time slowness (a statement slower than the lease's margin,
   * as the first ones of a process starting beside others): on a scaled clock a max wait of 10 simulated s is
   * 67 real ms at `timeScale` 150, which one slow statement at start-up outlasts.
   */
  #lateBound(request: TokenRequest): number {
    return Math.max(request.maxWaitMs / this.#core.scale, 2 * this.#core.leaseTtlMs);
  }

  /** Denies every queued request past its max wait; true if any was. */
  #denyOverdue(): boolean {
    let any = false;
    for (const q of [...this.#queue]) {
      if (q.done || !this.#overdue(q)) continue;
      this.#queue.splice(this.#queue.indexOf(q), 1);
      this.#core.deny(
        q,
        new Error(
          `the coordination backend's grants kept arriving too late to use for ${Math.round(this.#lateBound(q.request!))} real ms (max wait ${q.request!.maxWaitMs} ms, at least two lease TTLs)`,
        ),
      );
      any = true;
    }
    return any;
  }

  /** The endpoint was cooled by another process while this grant waited for its token: do not send to it. */
  #cooledElsewhere(p: Pending): boolean {
    if (!p.request) return false;
    const r = this.#core.endpoints.get(p.grant!.endpointId)?.health.readiness(this.#core.clock.now(), 0);
    return r !== undefined && (r.cause === 'cooldown' || r.cause === 'open' || r.cause === 'disabled');
  }

  /** Gives the local grant back and asks the local scheduler again (it may pick another endpoint, or wait). */
  #resubmit(p: Pending): void {
    this.#core.local.release(p.grant!.leaseId, { kind: 'unused' });
    p.grant = undefined;
    this.#core.submit(p);
  }

  /**
   * The endpoint's shared window is full for `retryInMs` real ms: the endpoint paces here until then and the request
   * goes back to the local scheduler (which waits or falls back, as for its own bucket). A probe keeps its grant and
   * asks again then (it is one call, due once the window has room).
   */
  #paced(p: Pending, retryInMs: number): void {
    const grant = p.grant!;
    const now = this.#core.clock.now();
    this.#core.endpoints.get(grant.endpointId)?.health.paceUntil(now + retryInMs * this.#core.scale);
    if (p.request) {
      this.#resubmit(p);
      return;
    }
    this.#parking.park(p, 'pace', retryInMs);
  }

  #granted(
    p: Pending,
    lease: GlobalLease,
    deadline: number,
    permit: RatePermit | undefined,
    permitDeadline: number,
  ): void {
    const wrapped: Grant = this.#leases.hold(p.grant!, {
      lease,
      deadline,
      permit,
      permitDeadline,
      probeClaimed: p.probeClaimed,
    });
    p.done = true;
    p.resolve(p.request ? { kind: 'granted', grant: wrapped } : wrapped);
  }
}
