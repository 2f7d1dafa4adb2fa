import type { Clock } from '../clock/clock.ts';
import type { CallSettlement } from '../health/endpoint-health.ts';
import type { TimerEntry, TimerHeap } from '../clock/timer-heap.ts';
import { type Grant, LeaseExpiredError } from './token-scheduler.ts';

/**
 * A held token. Its abort controller is made only when its holder first reads `signal` (most grants end
 * without ever needing one, and an AbortSignal costs more than the rest of a grant).
 */
class Lease implements Grant {
  readonly leaseId: string;
  readonly holder: string;
  readonly tier: string;
  readonly endpointId: string;
  readonly index: number;
  readonly grantedAt: number;
  readonly leaseUntil: number;
  readonly estimatedTokens: number;
  readonly probe: boolean;
  deadline: TimerEntry | undefined;
  claimed: boolean;
  reclaimed = false;
  onReclaim: ((reason: unknown) => void) | undefined;
  #controller: AbortController | undefined;
  #reason: unknown;

  constructor(fields: LeaseFields, leaseId: string, grantedAt: number, leaseUntil: number) {
    this.leaseId = leaseId;
    this.holder = fields.holder;
    this.tier = fields.tier;
    this.endpointId = fields.endpointId;
    this.index = fields.index;
    this.estimatedTokens = fields.estimatedTokens;
    this.probe = fields.probe;
    this.grantedAt = grantedAt;
    this.leaseUntil = leaseUntil;
    // A probe is sent by the runtime itself the moment it is granted: it counts as claimed.
    this.claimed = fields.probe;
  }

  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.#reason !== undefined) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  abort(reason: unknown): void {
    if (this.#reason !== undefined) return;
    this.#reason = reason;
    this.#controller?.abort(reason);
    this.onReclaim?.(reason);
  }
}

/** Options of a {@link LeaseBook}. */
export interface LeaseBookOptions {
  readonly clock: Clock;
  readonly timers: TimerHeap;
  /** A grant not released after this long is taken back, ms. */
  readonly leaseMs: number;
  /** After cancelling an overrun call, how long its holder has to give the token back before it is taken, ms. */
  readonly reclaimGraceMs: number;
  /** Gives a token back (the scheduler's release). */
  readonly release: (leaseId: string, outcome: CallSettlement) => void;
  /** A lease ran out and is being taken back. */
  readonly onReclaimed?: (grant: Grant, at: number) => void;
  /** A holder ignored the cancellation for `reclaimGraceMs`: the owner takes the token back (releases it). */
  readonly onCancellationIgnored: (grant: Grant) => void;
}

/** What a new lease is for. */
export type LeaseFields = Omit<Grant, 'leaseId' | 'grantedAt' | 'leaseUntil' | 'signal'>;

/**
 * The held tokens: one lease per grant, each with its deadline in the timer heap and the abort controller behind
 * its {@link Grant.signal}. A lease that runs out is taken back without breaking the cap on calls in flight:
 * - never claimed by its holder (nothing went upstream): given back at once;
 * - claimed: its call is cancelled through the signal, and the token comes back when the holder releases it,
 *   i.e. once the call has really ended; a holder that ignores the cancellation loses it after the grace.
 *
 * @example
 * ```ts
 * const grant = leases.open({ holder: 'Kai', tier: 'analysis', endpointId: 'sonnet', index: 0, estimatedTokens: 900, probe: false }, now);
 * leases.claim(grant.leaseId); // the call starts
 * leases.close(grant.leaseId); // the call ended
 * ```
 */
export class LeaseBook {
  readonly #o: LeaseBookOptions;
  readonly #leases = new Map<string, Lease>();
  #seq = 0;

  /** One function for every lease's deadline (no closure per grant). */
  readonly #onDeadline = (leaseId: string): void => this.#overrun(leaseId);

  constructor(options: LeaseBookOptions) {
    this.#o = options;
  }

  get size(): number {
    return this.#leases.size;
  }

  open(fields: LeaseFields, now: number): Grant {
    const leaseId = `${fields.probe ? 'probe' : 'lease'}-${++this.#seq}`;
    const lease = new Lease(fields, leaseId, now, now + this.#o.leaseMs);
    lease.deadline = this.#o.timers.schedule(lease.leaseUntil, this.#onDeadline, leaseId);
    this.#leases.set(leaseId, lease);
    return lease;
  }

  /** The holder takes up its grant; `undefined` when it is gone or already taken back. */
  claim(leaseId: string, onReclaim?: (reason: unknown) => void): Grant | undefined {
    const lease = this.#leases.get(leaseId);
    // A probe counts as claimed from its grant (a lease that runs out cancels it rather than handing its token back
    // while it may be upstream); its runner still takes it up, and may set `onReclaim`.
    if (!lease || (lease.claimed && !lease.probe) || lease.reclaimed) return undefined;
    lease.claimed = true;
    lease.onReclaim = onReclaim;
    return lease;
  }

  isClaimed(leaseId: string): boolean {
    return this.#leases.get(leaseId)?.claimed ?? false;
  }

  /** Removes a lease (its token is free again); returns its grant, or undefined when it was not held. */
  close(leaseId: string): Grant | undefined {
    const lease = this.#leases.get(leaseId);
    if (!lease) return undefined;
    this.#leases.delete(leaseId);
    lease.deadline?.cancel();
    return lease;
  }

  grants(): IterableIterator<Grant> {
    return this.#leases.values();
  }

  /** Cancels every held call (the runtime is stopping). The leases stay until their holders release them. */
  abortAll(reason: unknown): void {
    for (const lease of this.#leases.values()) {
      lease.deadline?.cancel();
      lease.abort(reason);
    }
  }

  #overrun(leaseId: string): void {
    const lease = this.#leases.get(leaseId);
    if (!lease || lease.reclaimed) return;
    lease.reclaimed = true;
    const now = this.#o.clock.now();
    this.#o.onReclaimed?.(lease, now);
    if (!lease.claimed) {
      this.#o.release(leaseId, { kind: 'unused' });
      return;
    }
    lease.abort(new LeaseExpiredError(this.#o.leaseMs));
    this.#o.timers.schedule(now + this.#o.reclaimGraceMs, () => {
      if (this.#leases.has(leaseId)) this.#o.onCancellationIgnored(lease);
    });
  }
}
