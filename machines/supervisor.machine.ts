import { type AnyActorRef, assign, fromPromise, setup, stopChild } from 'xstate';

/** Bumped whenever the supervisor's context or states change. */
export const SUPERVISOR_MACHINE_VERSION = 'supervisor@2';

export interface SupervisorContext {
  /** Global concurrency tokens. */
  readonly limit: number;
}

export interface SupervisorInput {
  readonly limit: number;
}

/**
 * - `STOP`: stop taking work, let the asks in progress finish (the runtime's `drain` actor decides how long),
 *   then stop every agent.
 * - `LIMIT.SET`: change the number of tokens (at least 1).
 * - `AGENT.STOP`: stop one agent actor.
 */
export type SupervisorEvent =
  | { type: 'STOP' }
  | { type: 'LIMIT.SET'; limit: number }
  /** Stops one agent actor (they run on this actor's system, so only it may stop them). */
  | { type: 'AGENT.STOP'; agent: AnyActorRef }
  /** An agent actor failed (a bug in a machine action): reported, contained; the supervisor goes on. */
  | { type: `xstate.error.actor.${string}`; error?: unknown };

/**
 * The supervisor's lifecycle, one per runtime:
 * - `running`: agents take asks; tokens are granted by the scheduler (a plain module, not this machine:
 *   granting is hot-path work that must not cost a statechart macrostep per event).
 * - `draining`: no new asks; the `drain` actor waits for the asks in progress (or cancels them when the
 *   caller's signal aborts).
 * - `unwinding`: `closeDoors` stops every agent and closes the scheduler (calls still in flight are aborted);
 *   the `unwind` actor waits until every token is back, i.e. every upstream call has really ended.
 * - `stopped` (final): `shutdown` closes the endpoints and the timers and wipes BYOK keys.
 *
 * Transitions only compute; the effects (`applyLimit`, `closeDoors`, `shutdown`, `drain`, `unwind`) are
 * provided by the runtime.
 *
 * @example
 * ```ts
 * const actor = createActor(supervisorMachine.provide({ actors: { drain, unwind }, actions: { applyLimit, closeDoors, shutdown } }),
 *   { input: { limit: 3 } }).start();
 * actor.send({ type: 'STOP' });
 * ```
 */
export const supervisorMachine = setup({
  types: {
    context: {} as SupervisorContext,
    events: {} as SupervisorEvent,
    input: {} as SupervisorInput,
  },
  actors: {
    drain: fromPromise<void, void>(async () => {}),
    unwind: fromPromise<void, void>(async () => {}),
  },
  actions: {
    setLimit: assign(({ event }) => (event.type === 'LIMIT.SET' ? { limit: Math.max(1, event.limit) } : {})),
    applyLimit: (_, _params: { limit: number }) => {},
    reportAgentFailure: (_, _params: { actorId: string; error: unknown }) => {},
    closeDoors: () => {},
    shutdown: () => {},
  },
}).createMachine({
  id: 'supervisor',
  context: ({ input }) => ({ limit: Math.max(1, input.limit) }),
  initial: 'running',
  on: {
    'LIMIT.SET': {
      actions: ['setLimit', { type: 'applyLimit', params: ({ context }) => ({ limit: context.limit }) }],
    },
    'AGENT.STOP': { actions: stopChild(({ event }) => (event as { agent: AnyActorRef }).agent) },
    // Agents share this actor's system (one system, not one per agent) but are not its children; a crashed one
    // reports here instead of taking the supervisor down.
    'xstate.error.actor.*': {
      actions: {
        type: 'reportAgentFailure',
        params: ({ event }) => ({
          actorId: event.type.slice('xstate.error.actor.'.length),
          error: event.error,
        }),
      },
    },
  },
  states: {
    running: {
      on: { STOP: 'draining' },
    },
    draining: {
      invoke: {
        src: 'drain',
        onDone: 'unwinding',
        onError: 'unwinding',
      },
    },
    unwinding: {
      entry: 'closeDoors',
      invoke: {
        src: 'unwind',
        onDone: 'stopped',
        onError: 'stopped',
      },
    },
    stopped: {
      type: 'final',
      entry: 'shutdown',
    },
  },
});
