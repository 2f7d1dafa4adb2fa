import type { Grant } from './token-scheduler.ts';

interface ProbeWaiter {
  readonly endpointId: string;
  readonly resolve: (g: Grant) => void;
  readonly reject: (e: unknown) => void;
  detach: (() => void) | undefined;
}

/**
 * HALF-OPEN probes waiting for a token, served before every tier in arrival order. Few at a time (at most one per
 * endpoint), so a plain array.
 *
 * @example
 * ```ts
 * const grant = probes.wait(endpointId, signal); // the scheduler serves probes.next() first
 * ```
 */
export class ProbeQueue {
  readonly #waiting: ProbeWaiter[] = [];

  get size(): number {
    return this.#waiting.length;
  }

  /** A probe for `endpointId` waits; rejected with the signal's reason if it aborts first. */
  wait(endpointId: string, signal?: AbortSignal): Promise<Grant> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<Grant>((resolve, reject) => {
      const p: ProbeWaiter = { endpointId, resolve, reject, detach: undefined };
      if (signal) {
        const onAbort = () => {
          const i = this.#waiting.indexOf(p);
          if (i < 0) return;
          this.#waiting.splice(i, 1);
          reject(signal.reason);
        };
        signal.addEventListener('abort', onAbort, { once: true });
        p.detach = () => signal.removeEventListener('abort', onAbort);
      }
      this.#waiting.push(p);
    });
  }

  /** The next probe to serve: `grant(endpointId)` makes its grant, which it resolves with. False when none waits. */
  serveNext(grant: (endpointId: string) => Grant): boolean {
    const p = this.#waiting.shift();
    if (!p) return false;
    p.detach?.();
    p.resolve(grant(p.endpointId));
    return true;
  }

  /** Rejects every waiting probe. */
  rejectAll(reason: unknown): void {
    for (const p of this.#waiting.splice(0)) {
      p.detach?.();
      p.reject(reason);
    }
  }
}
