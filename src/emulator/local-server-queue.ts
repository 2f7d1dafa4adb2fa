/**
 * Admission of a local server (vLLM, Ollama): up to `parallel` requests run; the rest wait in a
 * FIFO queue. vLLM's queue is unbounded (overload shows up as latency, never as a 429); Ollama
 * rejects once `maxQueue` requests wait (its 503 "server busy").
 */
export class LocalServerQueue {
  readonly #parallel: number | null;
  readonly #maxQueue: number | null;
  #running = 0;
  readonly #waiting: Array<() => void> = [];

  constructor(parallel: number | null, maxQueue: number | null) {
    this.#parallel = parallel;
    this.#maxQueue = maxQueue;
  }

  /**
   * Resolves with a release function once the request may run, or with `undefined` when the
   * queue is full. An abort while waiting removes it from the queue and rejects.
   */
  async acquire(signal: AbortSignal): Promise<(() => void) | undefined> {
    const release = () => {
      this.#running--;
      this.#waiting.shift()?.();
    };
    if (this.#parallel === null || this.#running < this.#parallel) {
      this.#running++;
      return once(release);
    }
    if (this.#maxQueue !== null && this.#waiting.length >= this.#maxQueue) return undefined;
    await new Promise<void>((resolve, reject) => {
      const go = () => {
        signal.removeEventListener('abort', onAbort);
        this.#running++;
        resolve();
      };
      const onAbort = () => {
        const i = this.#waiting.indexOf(go);
        if (i >= 0) this.#waiting.splice(i, 1);
        reject(signal.reason);
      };
      if (signal.aborted) return reject(signal.reason);
      this.#waiting.push(go);
      signal.addEventListener('abort', onAbort, { once: true });
    });
    return once(release);
  }
}

function once(fn: () => void): () => void {
  let done = false;
  return () => {
    if (!done) {
      done = true;
      fn();
    }
  };
}
