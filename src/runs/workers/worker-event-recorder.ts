import type { RuntimeEvent, RuntimeEventListener } from '../../core/runtime-event.ts';
import { appendRunEvents, createLiveEventLog } from '../../store/event-log.ts';
import type { BreakwaterDatabase } from '../../store/open-database.ts';
import type { LogEventInput } from '../../store/store-types.ts';

/** The events of one worker of a run: a live stream, and what goes to the committed log with its staged parts. */
export interface WorkerEventRecorder {
  readonly listener: RuntimeEventListener;
  /**
   * Writes what is buffered for the live stream, and the run's own start and end (`run.started`, `run.finished`:
   * they describe no round) to the committed log too; waits for writes under way.
   */
  flush(): Promise<void>;
  /**
   * The events heard since the last `take` that belong to `agent`'s part, in order, to be staged with it
   * (`stagePart`); with `shared`, the events that name no agent too (an endpoint's breaker, a probe).
   */
  take(agent: string, shared: boolean): LogEventInput[];
  /** Adds an event to the live stream only: its committed form is written by the statement that commits it. */
  echo(event: RuntimeEvent): void;
  /** Forgets what no staged part took (the parts that were taken over record their own when asked again). */
  clear(): void;
}

/**
 * Records a worker's events twice over. For the committed log: kept in memory and staged with the agent's part
 * they belong to, in the same statement, so they reach the log with the round's commit — a worker killed before
 * it staged leaves none, one killed after has them in the part. For the live view of `run --workers`: appended to
 * the run's live stream (`live_events`, see {@link createLiveEventLog}) at every `flush` or once `batchSize` wait,
 * so asking turns never waits on the database.
 *
 * @example
 * ```ts
 * const recorder = createWorkerEventRecorder(database, runId);
 * const unsubscribe = executor.subscribeEvents(recorder.listener);
 * await stagePart(database, claim, turns, state, recorder.take(claim.agent, true));
 * ```
 */
export function createWorkerEventRecorder(
  database: Pick<BreakwaterDatabase, 'db'>,
  runId: string,
  batchSize = 500,
): WorkerEventRecorder {
  const live = createLiveEventLog(database);
  let buffer: RuntimeEvent[] = [];
  let heard: RuntimeEvent[] = [];
  let ownRun: RuntimeEvent[] = [];
  let writing: Promise<void> = Promise.resolve();
  const write = (batch: RuntimeEvent[]) => {
    writing = writing.then(() => live.append(runId, batch.map(logEvent)));
    return writing;
  };
  return {
    listener(event) {
      buffer.push(event);
      if (event.type === 'run.started' || event.type === 'run.finished') {
        ownRun.push(event);
        return;
      }
      heard.push(event);
      if (buffer.length >= batchSize) {
        const batch = buffer;
        buffer = [];
        void write(batch).catch(() => {});
      }
    },
    async flush() {
      const own = ownRun;
      ownRun = [];
      if (own.length > 0) await appendRunEvents(database.db, runId, own.map(logEvent));
      const batch = buffer;
      buffer = [];
      if (batch.length > 0) await write(batch);
      else await writing;
    },
    take(agent, shared) {
      const mine = heard.filter((e) => e.agent === agent || (shared && e.agent === undefined));
      const taken = new Set(mine);
      heard = heard.filter((e) => !taken.has(e));
      return mine.map(logEvent);
    },
    echo(event) {
      buffer.push(event);
    },
    clear() {
      heard = [];
    },
  };
}

/** A runtime event as the logs store it. */
export function logEvent(e: RuntimeEvent): LogEventInput {
  return {
    at: Math.round(e.at),
    type: e.type,
    agent: e.agent ?? null,
    endpoint: e.endpoint ?? null,
    data: e.data ?? {},
  };
}
