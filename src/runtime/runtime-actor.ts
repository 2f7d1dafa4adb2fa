/*
 * The XState shapes breakwater's public types mention, declared here rather than imported from xstate: a program
 * that type-checks its dependencies (`skipLibCheck: false`) with `exactOptionalPropertyTypes` would otherwise
 * check xstate's own declarations, which do not pass under that option. XState's actors and inspection events are
 * structurally assignable to these.
 */

/** A snapshot of one of the runtime's actors. */
export interface RuntimeActorSnapshot {
  /** `active` while it runs; `done`, `error` or `stopped` after. */
  readonly status: 'active' | 'done' | 'error' | 'stopped';
  /** The statechart's state value (`'idle'`, `{ degraded: 'resting' }`, …). */
  readonly value: unknown;
  /** The actor's context (plain data). */
  readonly context: unknown;
}

/**
 * One of the runtime's XState actors (the supervisor's lifecycle, an agent), as breakwater exposes it: enough to
 * read its state and persist it. It is an XState actor; cast it to xstate's `AnyActorRef` for xstate's own tools.
 *
 * @example
 * ```ts
 * const snapshot = supervisor.actor.getSnapshot();
 * console.log(snapshot.status, snapshot.value);
 * ```
 */
export interface RuntimeActor {
  /** The actor's id (an agent's name; `supervisor` for the lifecycle). */
  readonly id: string;
  getSnapshot(): RuntimeActorSnapshot;
  /** The snapshot to persist (`createActor(machine, { snapshot })` restores it). */
  getPersistedSnapshot(): unknown;
}

/**
 * An XState inspection event (`@xstate.actor`, `@xstate.event`, `@xstate.snapshot`, `@xstate.microstep`,
 * `@xstate.action`): what the `inspect` option of `createSupervisor` receives. XState's `InspectionEvent` is one.
 *
 * @example
 * ```ts
 * createSupervisor(config, { inspect: (e: ActorInspectionEvent) => { if (e.type === '@xstate.event') log(e); } });
 * ```
 */
export interface ActorInspectionEvent {
  readonly type: string;
  /** The id of the root actor of the system the event came from. */
  readonly rootId: string;
  /** The actor the event is about. */
  readonly actorRef: unknown;
}
