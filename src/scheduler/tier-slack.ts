import { MinHeap } from '../clock/min-heap.ts';
import type { TimerHeap } from '../clock/timer-heap.ts';
import { TokenHandoff } from './token-handoff.ts';
import type { Waiter } from './waiter.ts';
import { WorkBook } from './work-book.ts';

/*
 * The `slack` tier policy's state: which waiting request is on the critical path of the work left, and how much a
 * pass over higher tiers has delayed them. Strict tier priority serves the lowest tier's agents last; each of them
 * works a chain of asks one after another, so when the higher tiers stop asking, those chains still have most of
 * their length to run on one token each while the other tokens idle: the round ends late. Slack starts such a chain
 * early enough, and promises each request of a higher tier that passes over it delay it by less than `maxDelayMs`
 * in all (plus the one pass that reaches the bound).
 *
 * The delay a pass causes: the request tier order would have served now is served at the next pick at the
 * earliest, and every request of a tier above the critical one moves back by the same slot. So one counter per tier
 * adds up the time from each pass to the pick after it, and a request's delay is its tier's counter now less the
 * counter when it arrived: O(tiers) per pass, O(1) per request.
 */

interface CriticalEntry {
  readonly waiter: Waiter;
  readonly workLeft: number;
}

/** Stale entries are swept out once they are this many and more than the live ones. */
const COMPACT_MIN = 64;

/** Longest a token is kept for a critical holder's next request, ms (it asks again at once unless it runs tools). */
const HANDOFF_MS = 100;

/** Longest chain first, then arrival. */
const longerFirst = (a: CriticalEntry, b: CriticalEntry) =>
  a.workLeft > b.workLeft || (a.workLeft === b.workLeft && a.waiter.seq < b.waiter.seq);

/** An entry is live while its waiter is still in its tier's FIFO (a parked or decided waiter left the FIFO). */
const live = (e: CriticalEntry) => e.waiter.state === 'fifo';

/**
 * The holders' work left, the FIFO waiters that said how much they have (longest chain first), the delay passes
 * caused per tier, and the tokens kept for critical holders between their asks. Costs: `enqueued` O(log n);
 * `candidate` O(log n) amortized (entries of waiters that left are dropped lazily, or swept when they pile up);
 * `picked` O(tiers); the rest O(1).
 *
 * @example
 * ```ts
 * const slack = new TierSlack(1_500, 3, timers, () => scheduler.pump());
 * slack.enqueued(w); // w.request.workLeft: 12
 * slack.candidate(3); // w, if its chain is the critical path on 3 tokens
 * ```
 */
export class TierSlack {
  /** The longest a waiting request is delayed in all by lower tiers' critical requests passing it, ms. */
  readonly maxDelayMs: number;
  readonly book = new WorkBook();
  readonly #heap = new MinHeap<CriticalEntry>(longerFirst);
  #stale = 0;
  /** Per tier rank: the delay passes caused to a request of that tier waiting since the start, ms. */
  readonly #delay: number[];
  /** The last pick, if it was a pass: its time and the rank of the request it served. */
  #pass: { readonly at: number; readonly rank: number } | undefined;
  readonly #handoff: TokenHandoff;

  /**
   * `ranks`: tier ranks in use (the known tiers and one for unknown ones); `timers`: the runtime's; `onKeptBack`: a
   * kept token went back to the queue unused (its holder did not ask in time): the scheduler serves it.
   */
  constructor(maxDelayMs: number, ranks: number, timers: TimerHeap, onKeptBack: () => void) {
    this.maxDelayMs = maxDelayMs;
    this.#delay = new Array<number>(ranks).fill(0);
    this.#handoff = new TokenHandoff(timers, Math.min(maxDelayMs, HANDOFF_MS), onKeptBack);
  }

  /** Tokens kept for holders' next requests (the scheduler counts them as held). */
  get kept(): number {
    return this.#handoff.kept;
  }

  /** A request arrived: its holder's work is noted. True when a token is kept for its holder: it takes it now. */
  asked(w: Waiter): boolean {
    const { holder, workLeft } = w.request;
    if (workLeft !== undefined) this.book.note(holder, workLeft, w.enqueuedAt);
    return this.#handoff.kept > 0 && this.#handoff.take(holder);
  }

  /** `holder` takes a token without waiting (nobody else waits): one kept for it, if any, is its. */
  tookAtOnce(holder: string): void {
    if (this.#handoff.kept > 0) this.#handoff.take(holder);
  }

  /** A request of `holder` waited `waitedMs` for its grant. */
  granted(holder: string, waitedMs: number): void {
    this.book.waited(holder, waitedMs);
  }

  /**
   * A call of `holder` ended at `now`: if it was its last ask, it has no work left; if it is on the critical path
   * (on `tokens` tokens) and `mayPass()` (passing the higher tiers once more keeps the promise), its token is kept
   * for its next request a moment.
   */
  released(holder: string, now: number, tokens: number, mayPass: () => boolean): void {
    this.refused(holder);
    if (this.book.isCritical(holder, tokens) && mayPass()) this.#handoff.hold(holder, now);
  }

  /** A request of `holder` was refused (or its call ended): if it was its last ask, it has no work left. */
  refused(holder: string): void {
    const left = this.book.workLeftOf(holder);
    if (left !== undefined && left <= 1) this.book.forget(holder);
  }

  /** A request of `holder` was withdrawn (its ask cancelled, its agent stopped): its work is not coming. */
  withdrawn(holder: string): void {
    this.book.forget(holder);
  }

  /** Kept tokens go back to the queue (a probe came, or the scheduler closed). */
  dropKept(): void {
    this.#handoff.dropAll();
  }

  /** `w` joined its tier's FIFO. */
  enqueued(w: Waiter): void {
    w.slackMark = this.#delay[w.rank]!;
    const { workLeft } = w.request;
    if (workLeft !== undefined && workLeft > 1) this.#heap.push({ waiter: w, workLeft });
  }

  /** A waiter left its FIFO (granted, parked, denied, withdrawn). */
  left(w: Waiter): void {
    if (w.request.workLeft === undefined || w.request.workLeft <= 1) return;
    this.#stale++;
    if (this.#stale >= COMPACT_MIN && this.#stale * 2 >= this.#heap.size) {
      this.#heap.retain(live);
      this.#stale = 0;
    }
  }

  /** The FIFO waiter with the longest chain, if that chain is on the critical path with `tokens` tokens. */
  candidate(tokens: number): Waiter | undefined {
    for (let e = this.#heap.peek(); e !== undefined; e = this.#heap.peek()) {
      if (live(e)) return this.book.isCritical(e.waiter.request.holder, tokens) ? e.waiter : undefined;
      this.#heap.pop();
      if (this.#stale > 0) this.#stale--;
    }
    return undefined;
  }

  /** A waiter was picked at `now`; `passed`: it went before a higher tier's request that tier order served first. */
  picked(w: Waiter, now: number, passed: boolean): void {
    const pass = this.#pass;
    if (pass) for (let r = 0; r < pass.rank; r++) this.#delay[r]! += now - pass.at;
    this.#pass = passed ? { at: now, rank: w.rank } : undefined;
  }

  /** How long passes have delayed `w` so far, ms (the slot of a pass not yet followed by a pick counts to `now`). */
  delayOf(w: Waiter, now: number): number {
    const pass = this.#pass;
    const pending = pass && w.rank < pass.rank ? now - pass.at : 0;
    return this.#delay[w.rank]! - w.slackMark + pending;
  }
}
