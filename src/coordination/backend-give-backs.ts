import type { CoordinationBackend, GlobalLease, RatePermit } from './coordination-backend.ts';

/**
 * What a coordinated scheduler gives back to its backend without waiting for the answer (tokens, shared window
 * units, probe claims), kept until answered so `dispose()` can wait for them (bounded) before closing the backend.
 */
export class BackendGiveBacks {
  readonly #backend: CoordinationBackend;
  /** Releases sent to the backend and not answered yet: dispose() waits for them (bounded) before closing it. */
  readonly #releasing = new Set<Promise<void>>();

  constructor(backend: CoordinationBackend) {
    this.#backend = backend;
  }

  /** Gives a global token back; a failed release is a token that comes back at its expiry (never over the limit). */
  release(lease: GlobalLease): void {
    this.#track(this.#backend.release(lease));
  }

  /** Gives a call's shared window units back (it never went); a failed refund only leaves the window fuller. */
  refund(permit: RatePermit): void {
    this.#track(this.#backend.refundRate(permit));
  }

  /** Gives the pool's probe claim of an endpoint back; a failed one only expires with its TTL. */
  endProbe(endpointId: string): void {
    this.#track(this.#backend.endProbe(endpointId));
  }

  /** The give-backs sent and not answered yet. */
  inFlight(): Promise<void>[] {
    return [...this.#releasing];
  }

  /** A give-back in flight: dispose() waits for it (bounded) before closing the backend. */
  #track(sending: Promise<void>): void {
    const p: Promise<void> = sending.then(
      () => {
        this.#releasing.delete(p);
      },
      () => {
        this.#releasing.delete(p);
      },
    );
    this.#releasing.add(p);
  }
}
