/*
 * The notifications a worker has received on the round channel, counted, and the waits they end. No connection here:
 * round-wakeup.ts feeds it from its LISTEN session. A wait ends on a notification for its run (or any run), on a
 * gap in listening, at its fallback poll, or on its signal.
 */

/** Counts round notifications and wakes the waits they are about. */
export class RoundNotices {
  readonly #waiters = new Set<{ runId: string | undefined; wake: () => void }>();
  #count = 0;
  /** The count at the last notification for each run (and for any run). */
  readonly #last = new Map<string | undefined, number>();
  /** The count when listening resumed after a gap: a wait marked before it looks again at once. */
  #resumedAt = 0;

  /** A mark of the notifications received so far (see `RoundWakeup.mark`). */
  mark(): number {
    return this.#count;
  }

  /** A notification for `runId` arrived: the waits on that run, and on any run, end. */
  notified(runId: string | undefined): void {
    this.#count++;
    this.#last.set(runId, this.#count);
    this.#last.set(undefined, this.#count);
    for (const w of this.#waiters) if (w.runId === undefined || w.runId === runId) w.wake();
  }

  /** Something may have moved while nobody listened: every wait looks again (as after a notification). */
  resumed(): void {
    this.#resumedAt = ++this.#count;
    this.wakeAll();
  }

  /** Ends every wait now. */
  wakeAll(): void {
    for (const w of this.#waiters) w.wake();
  }

  /** See `RoundWakeup.wait`. */
  wait(runId: string | undefined, fallbackMs: number, since: number, signal?: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      if (signal?.aborted || (this.#last.get(runId) ?? 0) > since || this.#resumedAt > since)
        return resolve();
      const waiter = { runId, wake: () => done() };
      const timer = setTimeout(() => done(), fallbackMs);
      const done = () => {
        clearTimeout(timer);
        this.#waiters.delete(waiter);
        signal?.removeEventListener('abort', done);
        resolve();
      };
      this.#waiters.add(waiter);
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}
