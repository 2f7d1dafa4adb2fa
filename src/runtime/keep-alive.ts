/**
 * Holds the Node process open while work is pending, and only then. The clock's timers are `unref`'d (a
 * runtime at rest must never keep a process alive), so without this a script whose agents are all cooling
 * would exit with its asks unsettled. One ref'd host interval exists while `hold()` calls outnumber
 * `release()` calls; it never fires anything (time is the injected clock's business).
 *
 * @example
 * ```ts
 * const keepAlive = new KeepAlive();
 * keepAlive.hold();              // an ask is pending
 * try { return await turn; } finally { keepAlive.release(); }
 * ```
 */
export class KeepAlive {
  #count = 0;
  #handle: ReturnType<typeof setInterval> | undefined;
  readonly #enabled: boolean;

  /** @param enabled false: never holds the process (e.g. an embedding program that manages its own lifetime). Default true. */
  constructor(enabled = true) {
    this.#enabled = enabled;
  }

  get pending(): number {
    return this.#count;
  }

  hold(): void {
    if (this.#count++ > 0 || !this.#enabled) return;
    // One interval for the runtime's life, ref'd and unref'd (cheaper than making one per busy spell).
    if (this.#handle === undefined) this.#handle = setInterval(() => {}, 1 << 30);
    this.#handle.ref();
  }

  release(): void {
    if (this.#count === 0) return;
    if (--this.#count === 0) this.#handle?.unref();
  }

  /** Drops the interval (the runtime stopped). */
  close(): void {
    if (this.#handle !== undefined) clearInterval(this.#handle);
    this.#handle = undefined;
  }
}
