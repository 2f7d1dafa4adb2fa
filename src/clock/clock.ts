import { onAbort } from './abort-fanout.ts';

/**
 * Time, injected. Every deadline, cooldown, bucket refill and timer in breakwater reads this
 * interface instead of `Date.now()`/`setTimeout`, so tests drive simulated time and never sleep.
 *
 * The shape of `setTimeout`/`clearTimeout` matches XState v5's `clock` option of `createActor`,
 * so the same clock can be handed to the actors.
 *
 * @example
 * ```ts
 * const clock = createManualClock(0);
 * clock.setTimeout(() => console.log('fired'), 1_000);
 * clock.advance(1_000); // prints "fired"
 * ```
 */
export interface Clock {
  /** Milliseconds since the epoch (or since the manual clock's origin). */
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/**
 * The longest delay a host timer holds (2^31 − 1 ms, about 24.8 days). Node turns a longer one (or NaN)
 * into 1 ms with a TimeoutOverflowWarning, so a huge delay would fire at once: it is clamped instead.
 */
const MAX_HOST_DELAY_MS = 2_147_483_647;

/**
 * A delay a host timer can hold: NaN and negatives become 0, anything past 2^31 − 1 ms is clamped.
 *
 * @example
 * ```ts
 * setTimeout(fn, hostDelay(1e300)); // about 24.8 days, not 1 ms with a warning
 * ```
 */
export function hostDelay(ms: number): number {
  return Number.isNaN(ms) ? 0 : Math.min(MAX_HOST_DELAY_MS, Math.max(0, ms));
}

/**
 * The real clock: `Date.now()` and the host timers. Timers are `unref`'d so they never hold a process open.
 *
 * @example
 * ```ts
 * createSupervisor(config, { clock: systemClock }); // the default
 * ```
 */
export const systemClock: Clock = Object.freeze({
  now: () => Date.now(),
  setTimeout: (fn: () => void, ms: number) => {
    const t = setTimeout(fn, hostDelay(ms));
    t.unref?.();
    return t;
  },
  clearTimeout: (handle: unknown) => clearTimeout(handle as NodeJS.Timeout),
});

/**
 * A clock that moves only when told to.
 *
 * @example
 * ```ts
 * const clock: ManualClock = createManualClock(Date.parse('2026-08-17T07:00:00Z'));
 * clock.advance(30_000);
 * ```
 */
export interface ManualClock extends Clock {
  /** Move time forward by `ms`, firing every timer that falls due, in order. */
  advance(ms: number): void;
  /** Move time forward to the next pending timer (if any) and fire it. Returns false if none was pending. */
  runNext(): boolean;
  /** Number of timers not yet fired. */
  pending(): number;
  /**
   * Marks real work in progress (an engine call from send to its last body byte, as on a virtual clock): counted,
   * never waited on by the clock itself. Whoever drives the clock reads {@link ManualClock.busy} before moving it.
   * Optional, so a hand-written ManualClock of a user's own still fits: {@link createManualClock}'s has it.
   */
  hold?(): () => void;
  /** Marks a wait for this clock (a simulated delay, e.g. the emulator's latency): offsets one hold. Optional. */
  park?(): () => void;
  /**
   * Whether real work is in progress that no simulated delay accounts for (more holds than parks): a request on
   * the wire. Moving time then would let a deadline overtake an answer a slow machine has not delivered yet.
   * Optional: a clock without it is never busy.
   */
  busy?(): boolean;
}

interface ManualTimer {
  id: number;
  at: number;
  fn: () => void;
}

/**
 * Creates a {@link ManualClock} starting at `origin` (default 0).
 *
 * @example
 * ```ts
 * const clock = createManualClock(Date.parse('2026-08-17T07:00:00+09:00'));
 * const supervisor = createSupervisor({ ...config, clock });
 * clock.advance(30_000); // a 30 s cooldown elapses instantly
 * ```
 */
export function createManualClock(origin = 0): ManualClock {
  let now = origin;
  let nextId = 1;
  const timers = new Map<number, ManualTimer>();
  let holds = 0;
  let parks = 0;
  const counted = (dec: () => void) => {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      dec();
    };
  };

  const dueTimer = (limit: number): ManualTimer | undefined => {
    let best: ManualTimer | undefined;
    for (const t of timers.values()) {
      if (t.at <= limit && (!best || t.at < best.at || (t.at === best.at && t.id < best.id))) best = t;
    }
    return best;
  };

  return {
    now: () => now,
    setTimeout(fn, ms) {
      const id = nextId++;
      timers.set(id, { id, at: now + Math.max(0, ms), fn });
      return id;
    },
    clearTimeout(handle) {
      timers.delete(handle as number);
    },
    advance(ms) {
      const target = now + Math.max(0, ms);
      for (let t = dueTimer(target); t; t = dueTimer(target)) {
        timers.delete(t.id);
        now = Math.max(now, t.at);
        t.fn();
      }
      now = target;
    },
    runNext() {
      const t = dueTimer(Number.POSITIVE_INFINITY);
      if (!t) return false;
      timers.delete(t.id);
      now = Math.max(now, t.at);
      t.fn();
      return true;
    },
    pending: () => timers.size,
    hold() {
      holds++;
      return counted(() => holds--);
    },
    park() {
      parks++;
      return counted(() => parks--);
    },
    busy: () => holds > parks,
  };
}

/**
 * Resolves after `ms` on the given clock, or rejects with the signal's reason when it aborts first.
 * This is for code that waits *outside* an actor (the round runner, the emulator's latency);
 * actors keep deadlines in context instead.
 */
export function sleep(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    // One listener on the signal however many sleeps share it (a round's turns all sleep on the run's signal:
    // one listener each made Node warn about a leak at 11 agents).
    const stop = signal
      ? onAbort(signal, () => {
          clock.clearTimeout(handle);
          reject(signal.reason);
        })
      : undefined;
    const handle = clock.setTimeout(() => {
      stop?.();
      resolve();
    }, ms);
  });
}
