import { type Actor, createActor, type Snapshot } from 'xstate';
import { type BreakerContext, type BreakerEvent, breakerMachine } from '../../machines/breaker.machine.ts';
import type { BreakerInput } from '../core/breaker-config.ts';
import { bucketWidth, type OutcomeBucket } from '../core/outcome-window.ts';

/** The three states of a breaker. */
export type { BreakerState } from './endpoint-health-view.ts';
import type { BreakerState } from './endpoint-health-view.ts';

/** What one event did to a breaker. */
export interface BreakerStep {
  readonly state: BreakerState;
  readonly previous: BreakerState;
  readonly changed: boolean;
}

/**
 * One endpoint's circuit breaker: an actor of `breakerMachine`, the statechart that holds every breaker rule.
 * It keeps no timer; its owner (`BreakerDriver`, inside `EndpointHealthTracker`) sends `TICK` at `openUntil` from the runtime's one
 * timer heap, so OPEN → HALF-OPEN has exactly one driver and one clock. (A live actor, not XState's pure
 * `transition()`: that builds a throwaway actor per event, five times the cost on the call path.)
 *
 * @example
 * ```ts
 * const breaker = new BreakerCell({ openMs: 30_000 });
 * breaker.send({ type: 'CALL_FAILED', at: now, kind: 'rate_limited' });
 * breaker.state; // 'closed' (one fault), 'open' after three
 * ```
 */
export class BreakerCell {
  readonly #actor: Actor<typeof breakerMachine>;
  /**
   * Successes not yet given to the machine: all in one bucket of its window, taken while the breaker is CLOSED
   * with no failure in its window and no fault streak, where a success cannot change its state (it only counts
   * in that bucket). They reach the machine as one `CALL_SUCCEEDED` with their `count` before any other event
   * and before the context or snapshot is read, so every reader sees what one event per call would have left.
   */
  #pending: { bucket: number; width: number; at: number; count: number } | undefined;

  /** `snapshot`: a persisted snapshot of this machine ({@link BreakerCell.persisted}) to restore instead of starting closed. */
  constructor(input: BreakerInput, snapshot?: Snapshot<unknown>) {
    this.#actor = createActor(breakerMachine, { input, ...(snapshot ? { snapshot } : {}) }).start();
  }

  /** The breaker's XState persisted snapshot (plain data: state and context, deadlines included). */
  persisted(): unknown {
    this.#flush();
    return this.#actor.getPersistedSnapshot();
  }

  /** The state (successes waiting to be counted never change it: they wait only while it is CLOSED). */
  get state(): BreakerState {
    return this.#actor.getSnapshot().value as BreakerState;
  }

  get context(): BreakerContext {
    this.#flush();
    return this.#actor.getSnapshot().context;
  }

  /** Applies one event; returns the state before and after. */
  send(event: BreakerEvent): BreakerStep {
    this.#flush();
    const previous = this.state;
    this.#actor.send(event);
    const state = this.state;
    return { state, previous, changed: state !== previous };
  }

  /**
   * A call succeeded at `at`: the same as `send({ type: 'CALL_SUCCEEDED', at })`, but while a success cannot change
   * the state (CLOSED, no failure in the window, no fault streak) it is counted here and reaches the machine with
   * the others of its bucket: no machine step per call on a healthy endpoint. Returns the step when the machine
   * took the event now, undefined when it was counted here (the state stays CLOSED).
   */
  succeeded(at: number): BreakerStep | undefined {
    const p = this.#pending;
    if (p !== undefined && Math.floor(at / p.width) === p.bucket) {
      p.count++;
      if (at > p.at) p.at = at;
      return undefined;
    }
    this.#flush();
    const { value, context } = this.#actor.getSnapshot();
    if (value === 'closed' && context.consecutive === 0 && !hasFailures(context.outcomes)) {
      const width = bucketWidth(context.config.windowMs);
      this.#pending = { bucket: Math.floor(at / width), width, at, count: 1 };
      return undefined;
    }
    return this.send({ type: 'CALL_SUCCEEDED', at });
  }

  /** Stops the actor (the endpoint is gone). */
  stop(): void {
    this.#flush();
    this.#actor.stop();
  }

  #flush(): void {
    const p = this.#pending;
    if (p === undefined) return;
    this.#pending = undefined;
    this.#actor.send({ type: 'CALL_SUCCEEDED', at: p.at, count: p.count });
  }
}

function hasFailures(outcomes: readonly OutcomeBucket[]): boolean {
  for (const b of outcomes) if (b.failures > 0) return true;
  return false;
}
