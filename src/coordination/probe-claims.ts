import { SchedulerClosedError } from '../scheduler/token-scheduler.ts';
import type { BackendGiveBacks } from './backend-give-backs.ts';
import type { Pending } from './pending-request.ts';
import type { ParkedFor, ProbeParking } from './probe-parking.ts';
import type { SchedulerCore } from './scheduler-core.ts';

/** A probe whose claim could not be asked for (backend down) fails after this, not at once (real ms). */
const CLAIM_FAILURE_DELAY_MS = 1_000;

/** The drain's queue as the probe claims use it. */
export interface ProbeQueue {
  /** Puts p at the head of the queue (probes are served before every tier) and drains. */
  serveFirst(p: Pending): void;
  /** Takes p out of the queue, if it is there. */
  remove(p: Pending): void;
}

/**
 * One HALF-OPEN probe per pool: a probe claim on the backend is taken before the local token (a refused prober
 * parks holding nothing), taken again before its global token if it waited past TTL/2 (the drain asks), and, once
 * granted, renewed by the heartbeat with its token (global-lease-book.ts). A parked prober looks again when its
 * endpoint's shared health changes or a claim is given back, and drops out if its breaker no longer wants a probe.
 */
export class ProbeClaims {
  readonly #core: SchedulerCore;
  readonly #giveBacks: BackendGiveBacks;
  readonly #parking: ProbeParking;
  readonly #queue: ProbeQueue;

  constructor(core: SchedulerCore, giveBacks: BackendGiveBacks, parking: ProbeParking, queue: ProbeQueue) {
    this.#core = core;
    this.#giveBacks = giveBacks;
    this.#parking = parking;
    this.#queue = queue;
  }

  /**
   * Takes the pool's probe claim of p's endpoint before any token: a process whose peer probes parks without
   * holding a local token, and looks again when the outcome arrives (or the claim is given back or expires).
   */
  async claim(p: Pending): Promise<void> {
    const endpointId = p.probeOf!;
    let mine: boolean;
    const sentAt = this.#core.now();
    try {
      await this.#core.connect();
      mine = await this.#core.backend.claimProbe(endpointId, this.#core.leaseTtlMs);
    } catch (e) {
      if (this.#core.closed()) {
        this.#core.withdraw(p, new SchedulerClosedError());
        return;
      }
      this.#core.failed(e);
      this.#core.dropConnection();
      // Settled on a timer, not at once: a caller that asks again at once (the probe runner, while the breaker wants
      // a probe) would otherwise spin in microtasks and starve the reconnect.
      const timer = setTimeout(() => this.#core.withdraw(p, e), CLAIM_FAILURE_DELAY_MS);
      timer.unref?.();
      return;
    }
    p.claimedAt = sentAt;
    this.#core.answered();
    if (p.done || this.#core.closed()) {
      if (mine) this.#giveBacks.endProbe(endpointId);
      this.#core.withdraw(p, new SchedulerClosedError());
      return;
    }
    if (!mine) {
      this.#parking.park(p, 'claim', this.#core.leaseTtlMs);
      return;
    }
    p.probeClaimed = true;
    this.grant(p);
  }

  /** The local probe grant (served before every tier), then a global token. */
  grant(p: Pending): void {
    this.#core.local.acquireProbe(p.probeOf!, p.signal).then(
      (grant) => {
        if (p.done) return this.#core.local.release(grant.leaseId, { kind: 'unused' });
        p.grant = grant;
        // Probes are served before every tier, here too.
        this.#queue.serveFirst(p);
      },
      (e: unknown) => this.#core.withdraw(p, e),
    );
  }

  /**
   * A parked probe's time came (see ProbeParking.park): dropped if the breaker here no longer wants a probe (the
   * other's probe decided); else a claim-parked one claims again, a paced one (which kept its local grant) asks for
   * its token again.
   */
  lookAgain(p: Pending, why: ParkedFor | undefined): void {
    if (p.done || this.#core.closed()) return;
    const health = this.#core.endpoints.get(p.probeOf!)?.health;
    if (!health?.wantsProbe()) {
      this.#core.withdraw(
        p,
        new Error('the probe is no longer wanted (another process probed the endpoint)'),
      );
      return;
    }
    if (why === 'claim') {
      void this.claim(p);
      return;
    }
    this.#queue.serveFirst(p);
  }

  /** Whether p is a probe that waited for a token long enough (TTL/2) that its claim may run out. */
  isStale(p: Pending): boolean {
    return !p.request && p.probeClaimed && this.#core.now() - p.claimedAt > this.#core.leaseTtlMs / 2;
  }

  /**
   * The claim of a stale probe was asked again (sent at `sentAt`) and answered `mine`: whether the probe goes on
   * to its global token. If not, it was settled elsewhere (its claim given back), or another process holds the
   * claim now and it parks holding nothing.
   */
  reclaimed(p: Pending, mine: boolean, sentAt: number): boolean {
    if (p.done || this.#core.closed()) {
      if (mine) this.#giveBacks.endProbe(p.probeOf!);
      return false;
    }
    if (!mine) {
      // Another process took it when ours ran out: this one waits for that probe's outcome, holding nothing.
      this.#queue.remove(p);
      p.probeClaimed = false;
      this.#core.local.release(p.grant!.leaseId, { kind: 'unused' });
      p.grant = undefined;
      this.#parking.park(p, 'claim', this.#core.leaseTtlMs);
      return false;
    }
    p.claimedAt = sentAt;
    return true;
  }
}
