/*
 * When a virtual clock's time may jump (see virtual-clock.ts): the holds and parks the parts of a run report, the
 * clock's activity, and the event-loop turns counted since it last changed. The clock's driver asks at every step.
 */

/** What a step of the virtual clock's driver does next. */
export type ClockStep =
  /** Unmatched holds: real work runs, poll gently (a 1 ms timer) and look again. */
  | 'busy'
  /** Idle, but not yet for `quietTurns` turns: count another turn (an immediate). */
  | 'settling'
  /** Idle long enough (or held past `maxHoldRealMs`): fire the earliest timer, moving time to it. */
  | 'jump';

/** The counters a virtual clock keeps to decide when its time may jump. */
export class JumpGate {
  /** Real work in progress (`hold()`s not yet released). */
  holds = 0;
  /** Waits for the clock itself (`park()`s not yet released); each offsets one hold. */
  parks = 0;
  /** Bumped by every timer set, cleared or fired, every hold and park taken or released. */
  activity = 0;
  /** Times the clock jumped past holds it could not see finish. */
  forcedJumps = 0;
  #quiet = 0;
  #lastActivity = -1;
  #busySince: number | undefined;

  constructor(
    readonly quietTurns: number,
    readonly maxHoldRealMs: number,
  ) {}

  /** What the driver does next, timers pending and none due; counts this step's turn. */
  next(): ClockStep {
    if (this.activity !== this.#lastActivity) {
      this.#lastActivity = this.activity;
      this.#quiet = 0;
    }
    if (this.holds > this.parks) {
      this.#busySince ??= Date.now();
      if (Date.now() - this.#busySince < this.maxHoldRealMs) {
        this.#quiet = 0;
        return 'busy';
      }
      this.forcedJumps++;
    } else this.#busySince = undefined;
    if (++this.#quiet < this.quietTurns && this.#busySince === undefined) return 'settling';
    this.#quiet = 0;
    this.#busySince = undefined;
    return 'jump';
  }
}
