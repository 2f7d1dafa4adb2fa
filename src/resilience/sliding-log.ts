/**
 * A log of weighted events in a sliding time window: the exact count behind the token bucket and
 * the retry budget. An event at `at` is inside the window ending at `now` while `at > now - windowMs`,
 * so it stops counting exactly `windowMs` after it happened.
 *
 * Internal: callers pass a monotonic `now` (the same injected clock); events are kept in time order.
 */
export class SlidingLog {
  readonly windowMs: number;
  #at: number[] = [];
  #cost: number[] = [];
  #head = 0;
  #total = 0;

  constructor(windowMs: number) {
    this.windowMs = windowMs;
  }

  /** Sum of the costs still in the window (after the last {@link prune}). */
  get total(): number {
    return this.#total;
  }

  /** Number of events still held. */
  get size(): number {
    return this.#at.length - this.#head;
  }

  /** Appends an event. An `at` earlier than the newest event is moved up to it, keeping the order. */
  add(at: number, cost: number): void {
    if (cost <= 0) return;
    const last = this.#at.length > this.#head ? this.#at[this.#at.length - 1]! : Number.NEGATIVE_INFINITY;
    this.#at.push(Math.max(at, last));
    this.#cost.push(cost);
    this.#total += cost;
  }

  /** Forgets the events that left the window ending at `now`. */
  prune(now: number): void {
    const horizon = now - this.windowMs;
    while (this.#head < this.#at.length && this.#at[this.#head]! <= horizon) {
      this.#total -= this.#cost[this.#head]!;
      this.#head++;
    }
    this.#compact();
  }

  /** Forgets every event that happened before `t`. */
  clearBefore(t: number): void {
    while (this.#head < this.#at.length && this.#at[this.#head]! < t) {
      this.#total -= this.#cost[this.#head]!;
      this.#head++;
    }
    this.#compact();
  }

  /** Takes `amount` off the newest events first (they would have counted longest). Returns what was taken. */
  reduceNewest(amount: number): number {
    let left = amount;
    for (let i = this.#at.length - 1; i >= this.#head && left > 0; i--) {
      const take = Math.min(this.#cost[i]!, left);
      this.#cost[i]! -= take;
      left -= take;
    }
    const taken = amount - left;
    this.#total -= taken;
    return taken;
  }

  /**
   * The earliest time at which at least `amount` of the current total has left the window, or
   * `undefined` when the log does not hold that much.
   */
  freedBy(amount: number): number | undefined {
    if (amount <= 0) return Number.NEGATIVE_INFINITY;
    let freed = 0;
    for (let i = this.#head; i < this.#at.length; i++) {
      freed += this.#cost[i]!;
      if (freed >= amount) return this.#at[i]! + this.windowMs;
    }
    return undefined;
  }

  /** The events still held, oldest first, as `[at, cost]` pairs (plain data for the durable store). */
  entries(): [number, number][] {
    const out: [number, number][] = [];
    for (let i = this.#head; i < this.#at.length; i++)
      if (this.#cost[i]! > 0) out.push([this.#at[i]!, this.#cost[i]!]);
    return out;
  }

  #compact(): void {
    // Drop the consumed prefix once it dominates, so the arrays stay proportional to the window.
    if (this.#head > 64 && this.#head * 2 > this.#at.length) {
      this.#at = this.#at.slice(this.#head);
      this.#cost = this.#cost.slice(this.#head);
      this.#head = 0;
    }
    if (this.#head === this.#at.length) this.#total = 0;
  }
}
