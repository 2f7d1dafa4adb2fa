import type { Clock } from './clock.ts';
import { JumpGate } from './virtual-clock-gate.ts';

/**
 * Simulated time that runs as fast as the machine allows and gives the same timeline however fast the
 * machine is: time stands still while real work is in progress and jumps to the next timer when the
 * process has nothing left to do but wait for one.
 *
 * "Real work in progress" is what the parts of a run say it is, through {@link holdClock} and
 * {@link parkOnClock}: an engine call holds the clock from the moment it sends until its response is
 * read; the emulator parks a request while it waits for the clock (latency, a hang, a queue); the
 * round runner holds it while it commits. Time may jump only when every hold is matched by a park
 * (each call in flight is waiting for a simulated delay) and a few turns of the event loop pass with
 * no clock activity (callbacks and promise chains have settled). A request in transit on a socket is
 * a hold without a park, so a jump can never overtake it: no header deadline fires because the loaded
 * machine was slow to deliver a response, and no agent's deadline passes while its answer is on the wire.
 */

/**
 * Options of {@link createVirtualClock}.
 *
 * @example
 * ```ts
 * const options: VirtualClockOptions = { origin: Date.parse('2026-03-02T09:00:00+09:00'), maxHoldRealMs: 10_000 };
 * ```
 */
export interface VirtualClockOptions {
  /** Simulated epoch ms at creation. Default 0. */
  readonly origin?: number;
  /**
   * Event-loop turns with no clock activity, no holds outstanding and timers pending before time
   * jumps. Default 3.
   */
  readonly quietTurns?: number;
  /**
   * Real ms the clock waits on unmatched holds before jumping anyway: a safety valve for I/O this
   * process cannot see finish (a real provider that never answers must still meet its header
   * deadline). Default 30 000.
   */
  readonly maxHoldRealMs?: number;
}

/**
 * A clock whose time moves only when the process is idle (see the module comment).
 *
 * @example
 * ```ts
 * const clock: VirtualClock = createVirtualClock();
 * const release = clock.hold(); // real work starts: time stands still
 * release();
 * clock.stop();
 * ```
 */
export interface VirtualClock extends Clock {
  /** Marks real work in progress: time stands still until the returned function is called. */
  hold(): () => void;
  /** Marks a wait for this clock (a simulated delay): offsets one hold until the returned function is called. */
  park(): () => void;
  /** Timers not yet fired. */
  pending(): number;
  /** Times the clock jumped past real work it could not see finish ({@link VirtualClockOptions.maxHoldRealMs}). */
  readonly forcedJumps: number;
  /** Stops driving time; pending timers never fire. */
  stop(): void;
}

interface Timer {
  readonly id: number;
  readonly at: number;
  readonly fn: () => void;
}

/** The timer due first at or before `limit` (the earliest set first among equals), or undefined. */
function earliest(timers: ReadonlyMap<number, Timer>, limit: number): Timer | undefined {
  let best: Timer | undefined;
  for (const t of timers.values())
    if (t.at <= limit && (!best || t.at < best.at || (t.at === best.at && t.id < best.id))) best = t;
  return best;
}

/**
 * Creates a {@link VirtualClock}. While simulated timers are pending its driver keeps the process
 * alive and runs them (a timer that re-arms itself runs forever): call `stop()` when the simulation
 * is over.
 *
 * @example
 * ```ts
 * const clock = createVirtualClock({ origin: Date.parse('2026-08-17T06:00:00+09:00') });
 * clock.setTimeout(() => console.log('08:30 KST'), 150 * 60_000); // fires at once in real time
 * ```
 */
export function createVirtualClock(options: VirtualClockOptions = {}): VirtualClock {
  const gate = new JumpGate(options.quietTurns ?? 3, options.maxHoldRealMs ?? 30_000);
  let now = options.origin ?? 0;
  let nextId = 1;
  const timers = new Map<number, Timer>();
  let stopped = false;
  let scheduled = false;

  const fire = (t: Timer) => {
    timers.delete(t.id);
    now = Math.max(now, t.at);
    gate.activity++;
    t.fn();
  };

  const schedule = (delayed: boolean) => {
    if (stopped || scheduled) return;
    scheduled = true;
    // While real work runs, poll gently; when idle, count event-loop turns. Not unref'd: an unref'd
    // immediate lets libuv block in poll until unrelated I/O arrives, which would stall simulated time.
    if (delayed) setTimeout(step, 1);
    else setImmediate(step);
  };

  function step(): void {
    scheduled = false;
    if (stopped) return;
    // Timers already due (a 0 ms delay, or set for a time already reached) fire without moving time.
    for (let t = earliest(timers, now); t; t = earliest(timers, now)) fire(t);
    if (timers.size === 0) return; // wakes up again on the next setTimeout
    const next = gate.next();
    if (next === 'jump') {
      const due = earliest(timers, Number.POSITIVE_INFINITY);
      if (due) fire(due);
    }
    schedule(next === 'busy');
  }

  const release = (counter: 'holds' | 'parks') => {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      if (counter === 'holds') gate.holds--;
      else gate.parks--;
      gate.activity++;
      schedule(false);
    };
  };

  return {
    now: () => now,
    setTimeout(fn, ms) {
      const id = nextId++;
      timers.set(id, { id, at: now + Math.max(0, Number.isFinite(ms) ? ms : 0), fn });
      gate.activity++;
      schedule(false);
      return id;
    },
    clearTimeout(handle) {
      if (timers.delete(handle as number)) gate.activity++;
    },
    hold() {
      gate.holds++;
      gate.activity++;
      return release('holds');
    },
    park() {
      gate.parks++;
      gate.activity++;
      schedule(false);
      return release('parks');
    },
    pending: () => timers.size,
    get forcedJumps() {
      return gate.forcedJumps;
    },
    stop() {
      stopped = true;
    },
  };
}

/**
 * Holds `clock` while real work runs, when it is a {@link VirtualClock}; a no-op for any other clock.
 *
 * @example
 * ```ts
 * const release = holdClock(clock);
 * try { await store.commitRound(input); } finally { release(); }
 * ```
 */
export function holdClock(clock: Clock): () => void {
  const hold = (clock as Partial<VirtualClock>).hold;
  return typeof hold === 'function' ? hold.call(clock) : noop;
}

/**
 * Marks a wait for `clock` itself (a simulated delay), when it is a {@link VirtualClock}; a no-op otherwise.
 *
 * @example
 * ```ts
 * const unpark = parkOnClock(clock);
 * try { await sleep(clock, latencyMs, signal); } finally { unpark(); }
 * ```
 */
export function parkOnClock(clock: Clock): () => void {
  const park = (clock as Partial<VirtualClock>).park;
  return typeof park === 'function' ? park.call(clock) : noop;
}

function noop(): void {}
