/**
 * How much sequential work each holder still has, as its requests said (`TokenRequest.workLeft`: asks left, run one
 * after another), weighed by how long one of its asks takes: the agent whose chain of asks takes longest is the one
 * that can stretch a round past its end. The book keeps each holder's load (asks left × time per ask) and their sum,
 * so "is this holder's chain longer than its share of the tokens?" is O(1).
 *
 * Time per ask is learned from the holder itself: the time from one ask's first request to the next one's, less the
 * time its requests waited for a token (that is the scheduler's doing, not the work's), smoothed; before its first
 * ask ends a holder is assumed as quick as the average holder (1 s before any ask has ended).
 *
 * A holder leaves the book when its last ask (`workLeft` 1) ends, or when a request of it is withdrawn (its ask
 * was cancelled or its agent stopped). A holder whose remaining asks were all cancelled without a request of its
 * in the scheduler stays until it asks again; meanwhile the sum is larger than the truth, which makes fewer
 * requests critical: the policy then leans towards plain tier order, never past its promise.
 *
 * @example
 * ```ts
 * const book = new WorkBook();
 * book.note('Rex', 12, now);
 * book.note('Kai', 3, now);
 * book.isCritical('Rex', 3); // true: 12 asks × 3 tokens ≥ 15 asks left in all (equal time per ask)
 * ```
 */
export class WorkBook {
  readonly #entries = new Map<string, Entry>();
  /** Time per ask of holders that left the book, for when they come back (a new round); at most LEARNED_MAX. */
  readonly #learned = new Map<string, number>();
  #meanPerAskMs: number | undefined;
  #total = 0;

  /** `holder` asks for a token with `workLeft` asks left, the current one included (a whole number ≥ 1). */
  note(holder: string, workLeft: number, now: number): void {
    let e = this.#entries.get(holder);
    if (!e) {
      const perAskMs = this.#learned.get(holder) ?? this.#meanPerAskMs ?? DEFAULT_PER_ASK_MS;
      e = { left: workLeft, perAskMs, since: now, waitedMs: 0, load: 0 };
      this.#entries.set(holder, e);
    } else if (workLeft !== e.left) {
      // An ask ended since its first request: learn how long its work took.
      if (workLeft < e.left) this.#learn(e, Math.max(0, now - e.since - e.waitedMs) / (e.left - workLeft));
      e.left = workLeft;
      e.since = now;
      e.waitedMs = 0;
    }
    this.#setLoad(e, e.left * e.perAskMs);
  }

  /** A request of `holder` waited `ms` for its token. */
  waited(holder: string, ms: number): void {
    const e = this.#entries.get(holder);
    if (e) e.waitedMs += ms;
  }

  /** `holder` has no work left that the book knows of. */
  forget(holder: string): void {
    const e = this.#entries.get(holder);
    if (!e) return;
    this.#entries.delete(holder);
    this.#total -= e.load;
    this.#learned.delete(holder);
    this.#learned.set(holder, e.perAskMs);
    if (this.#learned.size > LEARNED_MAX) this.#learned.delete(this.#learned.keys().next().value!);
  }

  /** `holder`'s asks left, or undefined when it is not in the book. */
  workLeftOf(holder: string): number | undefined {
    return this.#entries.get(holder)?.left;
  }

  /** The time all the work left takes on one token, ms (the sum of every holder's asks left × time per ask). */
  get total(): number {
    return this.#total;
  }

  /**
   * Whether `holder`'s asks, run one after another, take at least the time all the work left takes on `tokens`
   * tokens: then it is on the critical path, and every moment it waits for a token moves the end of the work. A
   * single ask left is never critical: it cannot make a tail longer than one ask.
   */
  isCritical(holder: string, tokens: number): boolean {
    const e = this.#entries.get(holder);
    return e !== undefined && e.left > 1 && e.load * tokens >= this.#total;
  }

  #learn(e: Entry, sampleMs: number): void {
    e.perAskMs = e.perAskMs + SMOOTHING * (sampleMs - e.perAskMs);
    this.#meanPerAskMs =
      this.#meanPerAskMs === undefined
        ? sampleMs
        : this.#meanPerAskMs + SMOOTHING * (sampleMs - this.#meanPerAskMs);
  }

  #setLoad(e: Entry, load: number): void {
    this.#total += load - e.load;
    e.load = load;
  }
}

interface Entry {
  /** Asks left, the current one included. */
  left: number;
  /** Smoothed time one ask of this holder takes, less its token waits, ms. */
  perAskMs: number;
  /** When the current ask's first request came. */
  since: number;
  /** Token waits of the current ask's requests so far, ms. */
  waitedMs: number;
  /** `left × perAskMs`, as counted in the book's total. */
  load: number;
}

/** Time per ask assumed before any ask has ended, ms. */
const DEFAULT_PER_ASK_MS = 1_000;
/** Weight of a new sample in the smoothed time per ask. */
const SMOOTHING = 0.3;
/** Holders whose time per ask is remembered after they leave the book (agents come back every round). */
const LEARNED_MAX = 10_000;
