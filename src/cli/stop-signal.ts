/** The process signals that stop a long-running command. */
export const STOP_SIGNALS: readonly NodeJS.Signals[] = Object.freeze([
  'SIGINT',
  'SIGTERM',
] as NodeJS.Signals[]);

/**
 * How long a command may take to shut down cleanly after SIGINT/SIGTERM before it exits anyway, in ms.
 *
 * @example
 * ```ts
 * const stop = listenForStop({ forceExitAfterMs: STOP_GRACE_MS });
 * ```
 */
export const STOP_GRACE_MS = 5_000;

/**
 * Options of {@link listenForStop}.
 *
 * @example
 * ```ts
 * listenForStop({ forceExitAfterMs: 5_000 });
 * ```
 */
export interface StopOptions {
  /**
   * After the first signal, exit anyway once this many ms passed (a clean shutdown can hang on a server
   * that stopped answering). One line on stderr says so. Default: none (wait for the clean shutdown).
   */
  readonly forceExitAfterMs?: number;
  /** Where that line goes. Default: stderr. */
  readonly writeErr?: (text: string) => void;
}

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
 * a second one exits at once with code 130, and with `forceExitAfterMs` the process exits by itself
 * when the clean shutdown takes longer than that.
 *
 * @example
 * ```ts
 * const stop = listenForStop();
 * try { await runUntilAborted(stop.signal); } finally { stop.dispose(); }
 * ```
 */
export function listenForStop(options: StopOptions = {}): StopListener {
  const controller = new AbortController();
  const writeErr = options.writeErr ?? ((text: string) => process.stderr.write(text));
  let got: NodeJS.Signals | undefined;
  const onSignal = (name: NodeJS.Signals) => {
    // A second signal while shutting down means "now": do not make the user wait on a stuck close.
    if (got !== undefined) process.exit(130);
    got = name;
    controller.abort(name);
    const grace = options.forceExitAfterMs;
    if (grace !== undefined && grace >= 0) {
      // A real-time guard on our own process, not a runtime deadline: no injected clock.
      const timer = setTimeout(() => {
        writeErr(
          `breakwater: did not shut down within ${Math.round(grace / 1000)} s after ${name}; exiting now (committed rounds are kept; \`breakwater runs\` lists interrupted runs)\n`,
        );
        process.exit(name === 'SIGTERM' ? 143 : 130);
      }, grace);
      // Unref'd: a clean shutdown that finishes in time exits on its own.
      timer.unref();
    }
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
