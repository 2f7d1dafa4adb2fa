import { sql } from 'kysely';
import type { RuntimeEvent, RuntimeEventListener } from '../events/runtime-event.ts';
import type { BreakwaterDatabase } from '../store/open-database.ts';

/** The event log of a run as one worker of several appends to it. */
export interface WorkerEventRecorder {
  readonly listener: RuntimeEventListener;
  /** Writes what is buffered (and waits for writes under way). */
  flush(): Promise<void>;
}

/**
 * Appends a worker's events to a run's event log that other workers append to as well: each batch takes the
 * run's next `seq` numbers under a transaction-scoped advisory lock on the run, so the numbers stay unique and
 * increasing across processes (the visualizer pages the log by `seq`). Events are kept in memory until `flush`
 * or until `batchSize` are waiting, so asking turns never waits on the database.
 *
 * @example
 * ```ts
 * const recorder = createWorkerEventRecorder(database, runId);
 * const unsubscribe = executor.subscribeEvents(recorder.listener);
 * await recorder.flush();
 * ```
 */
export function createWorkerEventRecorder(
  database: Pick<BreakwaterDatabase, 'db'>,
  runId: string,
  batchSize = 500,
): WorkerEventRecorder {
  let buffer: RuntimeEvent[] = [];
  let writing: Promise<void> = Promise.resolve();
  const write = (batch: RuntimeEvent[]) => {
    writing = writing.then(() =>
      database.db.transaction().execute(async (trx) => {
        await sql`select pg_advisory_xact_lock(hashtext(${`breakwater:events:${runId}`}))`.execute(trx);
        const row = await trx
          .selectFrom('events')
          .select(sql<number | string | null>`max(seq)`.as('max'))
          .where('run_id', '=', runId)
          .executeTakeFirst();
        const base = Number(row?.max ?? 0);
        await trx
          .insertInto('events')
          .values(
            batch.map((e, i) => ({
              run_id: runId,
              seq: base + i + 1,
              at: Math.round(e.at),
              type: e.type,
              agent: e.agent ?? null,
              endpoint: e.endpoint ?? null,
              data: JSON.stringify(e.data ?? {}),
            })),
          )
          .execute();
      }),
    );
    return writing;
  };
  return {
    listener(event) {
      buffer.push(event);
      if (buffer.length >= batchSize) {
        const batch = buffer;
        buffer = [];
        void write(batch).catch(() => {});
      }
    },
    async flush() {
      const batch = buffer;
      buffer = [];
      if (batch.length > 0) await write(batch);
      else await writing;
    },
  };
}
