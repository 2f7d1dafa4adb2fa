import type { Kysely } from 'kysely';
import { appendRunEvents, readEventRows } from './event-log.ts';
import { INT4_MAX, chunk, encodeJson, optionalId, requireId, requireInt } from './store-codec.ts';
import type { StoreSchema } from './store-schema.ts';
import type {
  EventInput,
  EventRecord,
  LogEventInput,
  ReadEventsOptions,
  StoreCallOptions,
} from './store-types.ts';

/*
 * The event log's rows (`events`): appended in order, read back by seq. Part of the run store (see run-store.ts);
 * a round's own events are written with its commit (event-log.ts).
 */

/** Events in a batched insert: 8 parameters a row, well under PostgreSQL's 65,535. */
const EVENT_CHUNK = 2_000;

/** The run store's event log methods. */
export function eventLogMethods(db: Kysely<StoreSchema>): {
  appendRunEvents(runId: string, events: readonly LogEventInput[], opts?: StoreCallOptions): Promise<void>;
  appendEvents(runId: string, events: readonly EventInput[], opts?: StoreCallOptions): Promise<void>;
  readEvents(runId: string, opts?: ReadEventsOptions): Promise<EventRecord[]>;
} {
  return {
    appendRunEvents(runId: string, events: readonly LogEventInput[], opts: StoreCallOptions = {}) {
      return appendRunEvents(db, runId, events, opts.signal);
    },

    async appendEvents(runId: string, events: readonly EventInput[], opts: StoreCallOptions = {}) {
      const op = 'appendEvents';
      opts.signal?.throwIfAborted();
      const id = requireId(op, 'runId', runId);
      const rows = events.map((e, i) => ({
        run_id: id,
        seq: requireInt(op, `events[${i}].seq`, e.seq, -INT4_MAX - 1, INT4_MAX),
        at: requireInt(op, `events[${i}].at`, e.at, 0),
        type: requireId(op, `events[${i}].type`, e.type),
        agent: optionalId(op, `events[${i}].agent`, e.agent),
        endpoint: optionalId(op, `events[${i}].endpoint`, e.endpoint),
        data: encodeJson(op, `events[${i}].data`, e.data ?? {}),
      }));
      if (rows.length === 0) return;
      const parts = chunk(rows, EVENT_CHUNK);
      if (parts.length === 1) {
        await db.insertInto('events').values(rows).execute();
        return;
      }
      await db.transaction().execute(async (trx) => {
        for (const part of parts) {
          opts.signal?.throwIfAborted();
          await trx.insertInto('events').values(part).execute();
        }
      });
    },

    async readEvents(runId: string, opts: ReadEventsOptions = {}) {
      return readEventRows(db, 'events', 'readEvents', runId, opts);
    },
  };
}
