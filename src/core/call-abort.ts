import { onAbort as onSignalAbort } from '../clock/abort-fanout.ts';

/**
 * How the runtime cancels one engine call without an `AbortController` of its own: on Node 20 making one costs
 * about 4 µs, and each listener on its signal (the SDK's, the fetch's) 1–2 µs more, per call, although almost no
 * call is ever cancelled. The adapter's `timedFetch` registers its abort here directly; an `AbortSignal` is made
 * only for whoever asks for one ({@link CallCancel.signal}: an engine the runtime did not build).
 */

/**
 * What an engine call reads of its cancellation: whether and why it was aborted, and a callback when it is.
 *
 * @example
 * ```ts
 * const off = abort.onAbort(() => controller.abort());
 * // … the fetch ended:
 * off();
 * ```
 */
export interface CallAbort {
  readonly aborted: boolean;
  readonly reason: unknown;
  /** The signal this cancellation stands for, when it is one (`signalAbort`); undefined otherwise. */
  readonly signal?: AbortSignal | undefined;
  /** `fn` runs once when the call is aborted (at once if it already was); the returned function takes it off. */
  onAbort(fn: () => void): () => void;
}

const nothing = (): void => {};

/**
 * A call's cancellation, aborted by its owner (the agent leaving the call, the lease running out).
 *
 * @example
 * ```ts
 * const cancel = new CallCancel();
 * scheduler.claim(leaseId, (reason) => cancel.abort(reason));
 * await engine.call({ ...request, abort: cancel });
 * ```
 */
export class CallCancel implements CallAbort {
  aborted = false;
  reason: unknown = undefined;
  #listeners: (() => void)[] | undefined;
  #controller: AbortController | undefined;

  /** An `AbortSignal` that aborts with this call (made on first use: only an engine that wants one pays for it). */
  get signal(): AbortSignal {
    if (!this.#controller) {
      this.#controller = new AbortController();
      if (this.aborted) this.#controller.abort(this.reason);
    }
    return this.#controller.signal;
  }

  onAbort(fn: () => void): () => void {
    if (this.aborted) {
      fn();
      return nothing;
    }
    this.#listeners ??= [];
    const listeners = this.#listeners;
    listeners.push(fn);
    return () => {
      const i = listeners.indexOf(fn);
      if (i >= 0) listeners.splice(i, 1);
    };
  }

  /** Aborts the call once: every listener runs, and the signal (if one was made) aborts with `reason`. */
  abort(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listeners = this.#listeners;
    this.#listeners = undefined;
    if (listeners) for (const fn of listeners) fn();
    this.#controller?.abort(reason);
  }
}

/**
 * A caller's `AbortSignal` as a {@link CallAbort} (a call made with `request.signal`).
 *
 * @example
 * ```ts
 * const abort = signalAbort(AbortSignal.timeout(5_000));
 * ```
 */
export function signalAbort(signal: AbortSignal): CallAbort {
  return {
    get aborted() {
      return signal.aborted;
    },
    get reason() {
      return signal.reason;
    },
    signal,
    // Through the fan-out: one caller's signal may cover many calls at once (a batch of asks), one listener each
    // would pile up on it (Node's MaxListenersExceededWarning from the 11th).
    onAbort: (fn) => onSignalAbort(signal, fn),
  };
}

/** The cancellation of `request`: the runtime's {@link CallAbort}, else the caller's signal, else none. */
export function callAbortOf(request: {
  readonly abort?: CallAbort | undefined;
  readonly signal?: AbortSignal | undefined;
}): CallAbort | undefined {
  return request.abort ?? (request.signal ? signalAbort(request.signal) : undefined);
}
