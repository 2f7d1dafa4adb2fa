import type { RuntimeEvent, RuntimeEventListener } from '../core/runtime-event.ts';
import type { RunStore } from '../store/run-store.ts';
import type { LogEventInput } from '../store/store-types.ts';

/**
 * A run's events on their way to the committed log. What is heard between two commits belongs to the round being
 * asked: it is handed to that round's commit (`take`, then `committed`) and written by the same statement, so the
 * log holds a round's events exactly when the round is committed — a kill at any moment leaves neither a
 * duplicate `turn.completed` (the round asked again after a resume) nor a committed turn without one.
 */
export interface EventRecorder {
  readonly listener: RuntimeEventListener;
  /** The events heard since the last commit, in order, for `commitRound({ events })`. */
  take(): LogEventInput[];
  /** The round the last `take` went to is committed: those events are in the log now. */
  committed(): void;
  /**
   * Writes what is heard since the last commit as its own statement: only for events that describe no round
   * (the run's end after its last commit). Unless `afterLastCommit`, events of an uncommitted round are dropped first
   * (the round is asked again on resume and records its own).
   */
  flush(options?: { readonly afterLastCommit?: boolean; readonly signal?: AbortSignal }): Promise<void>;
  /** Number of events heard so far in this process. */
  readonly count: number;
}

/**
 * Creates the event recorder of a run. Events are kept in memory until the commit of the round they belong to (the
 * hot path never waits on the database); a round's events are as many as its turns make, so memory follows the
 * round, not the run.
 *
 * @example
 * ```ts
 * const recorder = createEventRecorder(store, runId);
 * const supervisor = createSupervisor(config, { onEvent: recorder.listener });
 * await store.commitRound({ runId, round, turns, events: recorder.take() });
 * recorder.committed();
 * ```
 */
export function createEventRecorder(store: Pick<RunStore, 'appendRunEvents'>, runId: string): EventRecorder {
  let buffer: RuntimeEvent[] = [];
  let taken = 0;
  let count = 0;
  const rows = (events: readonly RuntimeEvent[]): LogEventInput[] =>
    events.map((e) => ({
      at: Math.round(e.at),
      type: e.type,
      agent: e.agent ?? null,
      endpoint: e.endpoint ?? null,
      data: e.data,
    }));
  return {
    listener(event) {
      count++;
      // The commit that makes a round committed writes its `round.committed` itself, in the same statement.
      if (event.type !== 'round.committed') buffer.push(event);
    },
    take() {
      taken = buffer.length;
      return rows(buffer);
    },
    committed() {
      buffer = buffer.slice(taken);
      taken = 0;
    },
    async flush(options = {}) {
      // Events heard after the run's last commit describe no round only when every round is committed.
      const batch = options.afterLastCommit ? buffer : buffer.filter(describesNoRound);
      buffer = [];
      taken = 0;
      if (batch.length > 0)
        await store.appendRunEvents(runId, rows(batch), options.signal ? { signal: options.signal } : {});
    },
    get count() {
      return count;
    },
  };
}

/** The run's own start and end: kept when an uncommitted round's events are dropped. */
function describesNoRound(e: RuntimeEvent): boolean {
  return e.type === 'run.started' || e.type === 'run.finished';
}
