/*
 * Where a coordinated token scheduler stands with its backend, one phase at a time: a union, not flags (cockatiel's
 * breaker state is the model). Two things travel with the phase: the connection every grant waits for (`connect()`
 * asks for it once and keeps it), and whether the backend was last seen failing, which `onBackendState` says once
 * each way (one line when it goes, one when it is back). Transitions are the functions below; each returns the
 * phase it was given when nothing changes, so the caller can tell a transition that has something to say.
 */

/**
 * No connection asked for yet: the next `connect()` (the first grant or probe claim makes one) starts it. Also where
 * an `up` scheduler goes when a drain drops its kept connection, and a `down` one without a connection when a
 * backend call answers.
 * Out: `connect()` → up; a backend call failing (a renewal of leases held across a dropped connection) → down;
 * `close()` → closed.
 */
export interface UnconnectedPhase {
  readonly kind: 'unconnected';
}

/**
 * A connection asked for and no backend call failed since the last that answered: grants are asked for.
 * `connection` is what every grant awaits, on its way or settled. A rejected one is a connect that failed while
 * down, kept when a later call (a renewal) brought the scheduler up again: the next drain denies its queue with
 * that failure at once and drops it.
 * Out: a backend call failing → down (said: ok false); a drain dropping the connection → unconnected; `close()` →
 * closed.
 */
export interface UpPhase {
  readonly kind: 'up';
  readonly connection: Promise<void>;
}

/**
 * A backend call failed (said once: ok false): the requests queued then were denied (fail closed), and each new one
 * is asked of the backend again, denied while it keeps failing. `connection` is the one kept: a failed connect's
 * rejection (the next drain denies at once and drops it), one still answering (a statement failed, not the
 * connection), or undefined once dropped (the next ask connects again).
 * Out: a backend call answering → up, or unconnected without a connection (said: ok true); `connect()` without a
 * connection → down with one; a drain or a failed probe claim dropping it → down without; `close()` → closed, down.
 */
export interface DownPhase {
  readonly kind: 'down';
  readonly connection: Promise<void> | undefined;
}

/**
 * `close()` was called: no request is taken any more and the queued ones were withdrawn. The leases still held are
 * renewed until `dispose()`, so the link to the backend lives on: a failure is no longer said (nothing new is sent
 * that could fail closed; a connect cut short by the close is not a backend that went away), but a scheduler
 * closed while `down` still says once that the backend is back if a renewal answers (`down` false then).
 * `connection` is kept for a `connect()` after the close, which starts one if there is none.
 * Out: none; only `down` and `connection` change.
 */
export interface ClosedPhase {
  readonly kind: 'closed';
  readonly down: boolean;
  readonly connection: Promise<void> | undefined;
}

/** The phase of a coordinated token scheduler: see each variant for what it means and what leads out of it. */
export type SchedulerPhase = UnconnectedPhase | UpPhase | DownPhase | ClosedPhase;

/** The phase a scheduler starts in. */
export const UNCONNECTED: SchedulerPhase = { kind: 'unconnected' };

/** The connection the phase keeps (every grant waits for it), if any. */
export function connectionOf(phase: SchedulerPhase): Promise<void> | undefined {
  return phase.kind === 'unconnected' ? undefined : phase.connection;
}

/** `connect()` asked the backend for a connection: the phase keeps it. */
export function withConnection(phase: SchedulerPhase, connection: Promise<void>): SchedulerPhase {
  return phase.kind === 'unconnected' ? { kind: 'up', connection } : { ...phase, connection };
}

/** The kept connection is dropped (it failed): the next ask connects again. */
export function withoutConnection(phase: SchedulerPhase): SchedulerPhase {
  switch (phase.kind) {
    case 'unconnected':
      return phase;
    case 'up':
      return UNCONNECTED;
    case 'down':
    case 'closed':
      return { ...phase, connection: undefined };
  }
}

/** A backend call failed: an open scheduler goes down (to be said); down stays down; closed says nothing. */
export function afterFailure(phase: SchedulerPhase): SchedulerPhase {
  switch (phase.kind) {
    case 'unconnected':
      return { kind: 'down', connection: undefined };
    case 'up':
      return { kind: 'down', connection: phase.connection };
    case 'down':
    case 'closed':
      return phase;
  }
}

/** A backend call answered: a down scheduler is up again (to be said), closed or not; any other stays as it is. */
export function afterAnswer(phase: SchedulerPhase): SchedulerPhase {
  if (phase.kind === 'down')
    return phase.connection ? { kind: 'up', connection: phase.connection } : UNCONNECTED;
  if (phase.kind === 'closed' && phase.down) return { ...phase, down: false };
  return phase;
}

/** `close()`: the scheduler is closed for good, with its backend's state and connection as they were. */
export function closedFrom(phase: SchedulerPhase): ClosedPhase {
  if (phase.kind === 'closed') return phase;
  return { kind: 'closed', down: phase.kind === 'down', connection: connectionOf(phase) };
}
