import type { Grant } from '../scheduler/token-scheduler.ts';
import type { BackendGiveBacks } from './backend-give-backs.ts';
import type { GlobalLease, RatePermit } from './coordination-backend.ts';
import { leaseKey } from './coordination-backend.ts';
import { LeaseFencedError } from './coordination-errors.ts';
import type { SchedulerCore } from './scheduler-core.ts';

/** A grant that holds a global token. */
export interface Held {
  readonly lease: GlobalLease;
  readonly grant: Grant;
  readonly fence: AbortController;
  /** Real time (`now()`) from which the backend may reissue the token, less the margin: no call starts after it. */
  deadline: number;
  claimed: boolean;
  onReclaim: ((reason: unknown) => void) | undefined;
  timer: ReturnType<typeof setTimeout> | undefined;
  /** The units taken from the endpoint's shared RPM/TPM window (given back if the call never went). */
  readonly permit: RatePermit | undefined;
  /**
   * Real time after which the permit no longer covers the call: a unit is counted one slot past a whole window
   * after its slot, so a call that reaches the provider more than one slot after its permit was asked for could
   * be outside every window the pool checks (the provider would see more than its limit). `claim()` refuses it
   * then; the agent asks again.
   */
  readonly permitDeadline: number;
  /** It holds the pool's probe claim of its endpoint (renewed with the lease, given back with it). */
  readonly probeClaimed: boolean;
}

/** What a grant holds besides itself once its global token is taken. */
export interface HeldTerms {
  readonly lease: GlobalLease;
  readonly deadline: number;
  readonly permit: RatePermit | undefined;
  readonly permitDeadline: number;
  readonly probeClaimed: boolean;
}

/**
 * The global tokens this process holds, each behind a fence: renewed by heartbeat every third of the TTL while any
 * is held; a renewal that fails or comes too late leaves the call to be cancelled (its signal aborts with a
 * LeaseFencedError) a fifth of the TTL before the backend could hand the token to someone else.
 */
export class GlobalLeaseBook {
  readonly #core: SchedulerCore;
  readonly #giveBacks: BackendGiveBacks;
  readonly #held = new Map<string, Held>();
  #heartbeat: ReturnType<typeof setInterval> | undefined;
  #renewing = false;

  constructor(core: SchedulerCore, giveBacks: BackendGiveBacks) {
    this.#core = core;
    this.#giveBacks = giveBacks;
  }

  get size(): number {
    return this.#held.size;
  }

  get(leaseId: string): Held | undefined {
    return this.#held.get(leaseId);
  }

  has(leaseId: string): boolean {
    return this.#held.has(leaseId);
  }

  values(): IterableIterator<Held> {
    return this.#held.values();
  }

  /** The fence deadline of a lease whose acquire (or renewal) was sent at `sentAt`, real ms. */
  deadlineFrom(sentAt: number): number {
    return sentAt + this.#core.leaseTtlMs - this.#margin();
  }

  /** Holds the grant's global token behind a fence; the grant handed out, its signal aborted by the fence. */
  hold(grant: Grant, terms: HeldTerms): Grant {
    const fence = new AbortController();
    const wrapped: Grant = { ...grant, signal: AbortSignal.any([grant.signal, fence.signal]) };
    const held: Held = {
      lease: terms.lease,
      grant: wrapped,
      fence,
      deadline: terms.deadline,
      claimed: false,
      onReclaim: undefined,
      timer: undefined,
      permit: terms.permit,
      permitDeadline: terms.permitDeadline,
      probeClaimed: terms.probeClaimed,
    };
    this.#held.set(grant.leaseId, held);
    this.#armFence(held, terms.deadline);
    this.#startHeartbeat();
    return wrapped;
  }

  /** Takes a lease off the book (its call ended); what it holds is given back by the caller. */
  forget(leaseId: string, h: Held): void {
    this.#held.delete(leaseId);
    if (h.timer) clearTimeout(h.timer);
  }

  /** dispose(): every lease given back (with its units if its call never went, and its probe claim). */
  giveAllBack(): void {
    for (const h of this.#held.values()) {
      if (h.timer) clearTimeout(h.timer);
      this.#giveBacks.release(h.lease);
      if (h.permit && !h.claimed) this.#giveBacks.refund(h.permit);
      if (h.probeClaimed) this.#giveBacks.endProbe(h.grant.endpointId);
    }
    this.#held.clear();
    this.stopHeartbeat();
  }

  /** Whether the lease may still carry a call (its fence deadline is ahead); fences it at once if not. */
  live(h: Held): boolean {
    if (this.#core.now() < h.deadline) return true;
    this.#fenced(h);
    return false;
  }

  stopHeartbeat(): void {
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
  }

  /** Cancels the call a fifth of the TTL before the backend could reissue its token. */
  #margin(): number {
    return Math.max(20, this.#core.leaseTtlMs / 5);
  }

  #armFence(h: Held, at: number): void {
    if (h.timer) clearTimeout(h.timer);
    h.deadline = at;
    h.timer = setTimeout(() => this.#fenced(h), Math.max(0, at - this.#core.now()));
    h.timer.unref?.();
  }

  #fenced(h: Held): void {
    if (h.timer) clearTimeout(h.timer);
    h.timer = undefined;
    if (h.fence.signal.aborted) return;
    const reason = new LeaseFencedError();
    h.fence.abort(reason);
    h.onReclaim?.(reason);
  }

  #startHeartbeat(): void {
    if (this.#heartbeat) return;
    this.#heartbeat = setInterval(() => void this.#renew(), Math.max(10, this.#core.leaseTtlMs / 3));
    this.#heartbeat.unref?.();
  }

  async #renew(): Promise<void> {
    if (this.#renewing || this.#held.size === 0) return;
    this.#renewing = true;
    const sentAt = this.#core.now();
    // A lease past its deadline is fenced, not renewed: its call may not go on even if the backend still has it.
    const held = [...this.#held.values()].filter((h) => !h.fence.signal.aborted && this.live(h));
    try {
      const renewed = await this.#core.backend.renew(held.map((h) => h.lease));
      this.#core.answered();
      for (const h of held) {
        if (renewed.has(leaseKey(h.lease))) {
          if (!h.fence.signal.aborted) this.#armFence(h, this.deadlineFrom(sentAt));
        } else this.#fenced(h);
      }
      this.#renewProbeClaims(held);
    } catch (e) {
      // Each held call is cancelled at its own fence deadline if no later renewal succeeds.
      this.#core.failed(e);
    } finally {
      this.#renewing = false;
    }
  }

  /**
   * A probe longer than the TTL keeps the pool's claim with its token; a claim another process took meanwhile (ours
   * ran out) means two probes at once: ours stops. Not awaited by the heartbeat (a slow claim must not hold up the
   * tokens' renewal); a probe that settled while its claim was renewed gives the claim back again.
   */
  #renewProbeClaims(held: readonly Held[]): void {
    for (const h of held) {
      if (!h.probeClaimed || h.fence.signal.aborted || this.#held.get(h.grant.leaseId) !== h) continue;
      this.#core.backend.claimProbe(h.grant.endpointId, this.#core.leaseTtlMs).then(
        (mine) => {
          if (this.#held.get(h.grant.leaseId) !== h) {
            if (mine) this.#giveBacks.endProbe(h.grant.endpointId);
          } else if (!mine) this.#fenced(h);
        },
        // The probe's own fence deadline stops it if no later renewal succeeds.
        () => {},
      );
    }
  }
}
