import { sql } from 'kysely';
import type { RuntimeEvent, RuntimeEventListener } from '../events/runtime-event.ts';
import type { BreakwaterDatabase } from '../store/open-database.ts';
import type { RunStore } from '../store/run-store.ts';

/** Options of {@link createEventRecorder}. */
export interface EventRecorderOptions {
  /** Events buffered before a write. Default 500. */
  readonly batchSize?: number;
}

/** Appends a run's events to the event log in batches; `seq` continues after a resume. */
export interface EventRecorder {
  readonly listener: RuntimeEventListener;
  /** Writes what is buffered. */
  flush(signal?: AbortSignal): Promise<void>;
  /** Number of events recorded so far in this process. */
  readonly count: number;
}

/**
 * Creates the event recorder of a run. Events are kept in memory until `flush` (the runner flushes at every
 * round commit and when the buffer fills), so the hot path never waits on the database.
 *
 * @example
 * ```ts
 * const recorder = await createEventRecorder(database, store, runId);
 * const supervisor = createSupervisor(config, { onEvent: recorder.listener });
 * await recorder.flush();
 * ```
 */
export async function createEventRecorder(
  database: BreakwaterDatabase,
  store: RunStore,
  runId: string,
  options: EventRecorderOptions = {},
): Promise<EventRecorder> {
  const batchSize = options.batchSize ?? 500;
  const row = await database.db
    .selectFrom('events')
    .select(sql<number | string | null>`max(seq)`.as('max'))
    .where('run_id', '=', runId)
    .executeTakeFirst();
  let seq = Number(row?.max ?? 0);
  let buffer: RuntimeEvent[] = [];
  let writing: Promise<void> = Promise.resolve();
  let count = 0;

  const write = (batch: RuntimeEvent[], signal?: AbortSignal) => {
    const rows = batch.map((e) => ({
      seq: ++seq,
      at: Math.round(e.at),
      type: e.type,
      agent: e.agent ?? null,
      endpoint: e.endpoint ?? null,
      data: e.data,
    }));
    writing = writing.then(() =>
      store.appendEvents(runId, rows, signal ? { signal } : {}).then(() => undefined),
    );
    return writing;
  };

  return {
    listener(event) {
      buffer.push(event);
      count++;
      if (buffer.length >= batchSize) {
        const batch = buffer;
        buffer = [];
        void write(batch).catch(() => {});
      }
    },
    async flush(signal) {
      const batch = buffer;
      buffer = [];
      if (batch.length > 0) await write(batch, signal);
      else await writing;
    },
    get count() {
      return count;
    },
  };
}
