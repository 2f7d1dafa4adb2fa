/**
 * The old worker's thread pool: at most `size` tasks run at once, the rest wait in FIFO order. A task
 * holds its thread for its whole life, blocking sleeps included — which is how a few cooling agents
 * starved seed 000's worker.
 *
 * @example
 * ```ts
 * const pool = new WorkerPool(4);
 * await pool.acquire(signal);
 * try { await runTask(); } finally { pool.release(); }
 * ```
 */
export class WorkerPool {
  readonly size: number;
  #busy = 0;
  readonly #waiting: { resolve: () => void; reject: (e: unknown) => void; signal?: AbortSignal }[] = [];

  /** `size` threads; `Infinity` (the default) means every task runs at once. */
  constructor(size = Number.POSITIVE_INFINITY) {
    if (!(size >= 1)) throw new RangeError(`a worker pool needs at least one thread (got ${size})`);
    this.size = size;
  }

  /** Threads busy now. */
  get busy(): number {
    return this.#busy;
  }

  /** Tasks waiting for a thread. */
  get queued(): number {
    return this.#waiting.length;
  }

  /** Resolves when a thread is free for the caller; rejects with the signal's reason if it aborts first. */
  acquire(signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    if (this.#busy < this.size) {
      this.#busy++;
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const entry = { resolve, reject, ...(signal ? { signal } : {}) };
      this.#waiting.push(entry);
      signal?.addEventListener(
        'abort',
        () => {
          const i = this.#waiting.indexOf(entry);
          if (i >= 0) {
            this.#waiting.splice(i, 1);
            reject(signal.reason);
          }
        },
        { once: true },
      );
    });
  }

  /** Gives a thread back; the longest-waiting task gets it. */
  release(): void {
    const next = this.#waiting.shift();
    if (next) next.resolve();
    else this.#busy = Math.max(0, this.#busy - 1);
  }
}
