import type { Pending } from './pending-request.ts';

/** A probe parked for another process's claim asks again at most this often, whatever the wake-ups (real ms). */
const MIN_RECLAIM_MS = 100;

/** Why a probe is parked (see {@link Pending.parkedFor}). */
export type ParkedFor = 'claim' | 'pace';

/**
 * Probes waiting without a place in the drain's queue: for another process's probe claim, or for their endpoint's
 * shared window to have room (each on its own timer). A probe whose time comes is taken off and handed to `due`
 * with why it waited (the probe claims decide whether it asks again or drops out).
 */
export class ProbeParking {
  readonly #now: () => number;
  readonly #due: (p: Pending, why: ParkedFor | undefined) => void;
  /** Probes waiting for another process's claim, or for their endpoint's shared window to have room. */
  readonly #parked = new Set<Pending>();
  readonly #timers = new Map<Pending, ReturnType<typeof setTimeout>>();

  constructor(now: () => number, due: (p: Pending, why: ParkedFor | undefined) => void) {
    this.#now = now;
    this.#due = due;
  }

  get size(): number {
    return this.#parked.size;
  }

  /**
   * A probe waits until `ms` real ms passed or, if it is parked for the pool's claim, until its endpoint's shared
   * health changes or a claim is given back: it is dropped then if the breaker here no longer wants a probe (the
   * other's probe decided), else it asks again (a paced probe keeps its local grant and asks for its token again).
   */
  park(p: Pending, why: ParkedFor, ms: number): void {
    p.parkedFor = why;
    p.parkedAt = this.#now();
    this.#parked.add(p);
    const timer = setTimeout(() => this.#unpark(p), Math.max(1, ms));
    timer.unref?.();
    this.#timers.set(p, timer);
  }

  /** Takes p off the parked set without looking again (it settled). */
  unparkQuietly(p: Pending): boolean {
    if (!this.#parked.delete(p)) return false;
    clearTimeout(this.#timers.get(p));
    this.#timers.delete(p);
    return true;
  }

  /**
   * Unparks the claim-parked probes of one endpoint, or of every endpoint (`undefined`). Paced probes wait for their
   * own timer: a wake-up cannot make room in a window.
   */
  unparkProbes(endpointId: string | undefined): void {
    const now = this.#now();
    for (const p of [...this.#parked]) {
      if (p.parkedFor !== 'claim' || (endpointId !== undefined && p.probeOf !== endpointId)) continue;
      // Wake-ups come with every token given back in the pool: a parked probe asks again at most every
      // MIN_RECLAIM_MS (a sooner wake moves its timer there), not once per wake-up.
      const due = p.parkedAt + MIN_RECLAIM_MS;
      if (now >= due) this.#unpark(p);
      else {
        clearTimeout(this.#timers.get(p));
        const timer = setTimeout(() => this.#unpark(p), due - now);
        timer.unref?.();
        this.#timers.set(p, timer);
      }
    }
  }

  /** The parked probes, for close() to withdraw. */
  parked(): Pending[] {
    return [...this.#parked];
  }

  /** close(): every timer stopped, nothing parked any more. */
  clear(): void {
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#parked.clear();
    this.#timers.clear();
  }

  #unpark(p: Pending): void {
    if (!this.unparkQuietly(p)) return;
    const why = p.parkedFor;
    p.parkedFor = undefined;
    this.#due(p, why);
  }
}
