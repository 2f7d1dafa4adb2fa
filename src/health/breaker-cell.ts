import { type Actor, createActor, type Snapshot } from 'xstate';
import {
  type BreakerContext,
  type BreakerEvent,
  type BreakerInput,
  breakerMachine,
} from '../../machines/breaker.machine.ts';

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
 * It keeps no timer; its owner (`EndpointHealthTracker`) sends `TICK` at `openUntil` from the runtime's one
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

  /** `snapshot`: a persisted snapshot of this machine ({@link BreakerCell.persisted}) to restore instead of starting closed. */
  constructor(input: BreakerInput, snapshot?: Snapshot<unknown>) {
    this.#actor = createActor(breakerMachine, { input, ...(snapshot ? { snapshot } : {}) }).start();
  }

  /** The breaker's XState persisted snapshot (plain data: state and context, deadlines included). */
  persisted(): unknown {
    return this.#actor.getPersistedSnapshot();
  }

  get state(): BreakerState {
    return this.#actor.getSnapshot().value as BreakerState;
  }

  get context(): BreakerContext {
    return this.#actor.getSnapshot().context;
  }

  /** Applies one event; returns the state before and after. */
  send(event: BreakerEvent): BreakerStep {
    const previous = this.state;
    this.#actor.send(event);
    const state = this.state;
    return { state, previous, changed: state !== previous };
  }

  /** Stops the actor (the endpoint is gone). */
  stop(): void {
    this.#actor.stop();
  }
}
