/** The process signals that stop a long-running command. */
export const STOP_SIGNALS: readonly NodeJS.Signals[] = Object.freeze([
  'SIGINT',
  'SIGTERM',
] as NodeJS.Signals[]);

/** What {@link listenForStop} returns. */
export interface StopListener {
  /** Aborts when SIGINT or SIGTERM arrives; its `reason` is the signal's name. */
  readonly signal: AbortSignal;
  /** The signal that arrived, if any. */
  received(): NodeJS.Signals | undefined;
  /** Removes the process listeners (the default handlers come back). Safe to call twice. */
  dispose(): void;
}

/**
 * Turns SIGINT/SIGTERM into an `AbortSignal`, so a command can shut down cleanly (close servers and
 * databases) instead of being killed. While listening, the first signal no longer ends the process;
 * a second one exits at once with code 130.
 *
 * @example
 * ```ts
 * const stop = listenForStop();
 * try { await runUntilAborted(stop.signal); } finally { stop.dispose(); }
 * ```
 */
export function listenForStop(): StopListener {
  const controller = new AbortController();
  let got: NodeJS.Signals | undefined;
  const onSignal = (name: NodeJS.Signals) => {
    // A second signal while shutting down means "now": do not make the user wait on a stuck close.
    if (got !== undefined) process.exit(130);
    got = name;
    controller.abort(name);
  };
  for (const s of STOP_SIGNALS) process.on(s, onSignal);
  let disposed = false;
  return {
    signal: controller.signal,
    received: () => got,
    dispose() {
      if (disposed) return;
      disposed = true;
      for (const s of STOP_SIGNALS) process.off(s, onSignal);
    },
  };
}

/**
 * Resolves when `signal` aborts (at once if it already has).
 *
 * @example
 * ```ts
 * await whenAborted(stop.signal); // blocks until Ctrl+C
 * ```
 */
export function whenAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
}
