import { type Kysely, sql } from 'kysely';
import type { BreakwaterDatabase } from './open-database.ts';
import { INT4_MAX, encodeJson, optionalId, requireId, requireInt, toEventRecord } from './store-codec.ts';
import type { StoreSchema } from './store-schema.ts';
import type { EventRecord, LogEventInput, ReadEventsOptions } from './store-types.ts';

/** An event checked and shaped as the log statements take it (one JSON array, numbered in SQL). */
export interface LogEventRow {
  readonly at: number;
  readonly type: string;
  readonly agent: string | null;
  readonly endpoint: string | null;
  readonly data: unknown;
}

/**
 * Checks events for the log (ids, a whole `at`), in their order.
 *
 * @throws {StoreInputError} naming `events[i].<field>`
 * @example
 * ```ts
 * const rows = logEventRows('commitRound', input.events ?? []);
 * ```
 */
export function logEventRows(operation: string, events: readonly LogEventInput[]): LogEventRow[] {
  return events.map((e, i) => ({
    at: requireInt(operation, `events[${i}].at`, Math.round(e.at), 0),
    type: requireId(operation, `events[${i}].type`, e.type),
    agent: optionalId(operation, `events[${i}].agent`, e.agent),
    endpoint: optionalId(operation, `events[${i}].endpoint`, e.endpoint),
    data: e.data ?? {},
  }));
}

/**
 * Appends events to a run's committed log in ONE statement, numbered after its last event. For what describes no
 * round (a run's start or end after its last commit): a round's events go with its commit (`commitRound`). One
 * writer per run at a time (its lease, or the worker that committed its last round), so the numbers stay unique.
 *
 * @example
 * ```ts
 * await appendRunEvents(db, runId, [{ at: clock.now(), type: 'run.finished', data: { runId, status } }]);
 * ```
 */
export async function appendRunEvents(
  db: Kysely<StoreSchema>,
  runId: string,
  events: readonly LogEventInput[],
  signal?: AbortSignal,
): Promise<void> {
  const op = 'appendRunEvents';
  signal?.throwIfAborted();
  const id = requireId(op, 'runId', runId);
  const rows = logEventRows(op, events);
  if (rows.length === 0) return;
  await sql`
    insert into events (run_id, seq, at, type, agent, endpoint, data)
    select ${id}, coalesce((select max(o.seq) from events o where o.run_id = ${id}), 0) + e.n,
           (e.v->>'at')::bigint, e.v->>'type', e.v->>'agent', e.v->>'endpoint', coalesce(e.v->'data', '{}'::jsonb)
    from jsonb_array_elements(${encodeJson(op, 'events', rows)}::jsonb) with ordinality as e(v, n)
  `.execute(db);
}

/** The live stream of a run spread over workers (`live_events`): what they hear as it happens. */
export interface LiveEventLog {
  /**
   * Appends events numbered after the run's last live event, under a transaction-scoped advisory lock on the
   * run, so numbers stay unique and increasing across worker processes.
   */
  append(runId: string, events: readonly LogEventInput[], signal?: AbortSignal): Promise<void>;
  /** Live events in `seq` order, as `RunStore.readEvents` reads the committed log. */
  readEvents(runId: string, options?: ReadEventsOptions): Promise<EventRecord[]>;
}

/**
 * The live stream of a run's workers, kept apart from the committed log: the parent of `run --workers` shows it as
 * it happens; the report, the visualizer's replay and `/metrics` read only the committed log. It may hold events
 * of turns a worker asked and never staged (killed, taken over), which are asked again.
 *
 * @example
 * ```ts
 * const tail = createRunEventTail(createLiveEventLog(database), runId);
 * ```
 */
export function createLiveEventLog(database: Pick<BreakwaterDatabase, 'db'>): LiveEventLog {
  const db = database.db;
  return {
    async append(runId, events, signal) {
      const op = 'appendLiveEvents';
      signal?.throwIfAborted();
      const id = requireId(op, 'runId', runId);
      const rows = logEventRows(op, events);
      if (rows.length === 0) return;
      await db.transaction().execute(async (trx) => {
        await sql`select pg_advisory_xact_lock(hashtext(${`breakwater:live-events:${id}`}))`.execute(trx);
        await sql`
          insert into live_events (run_id, seq, at, type, agent, endpoint, data)
          select ${id}, coalesce((select max(o.seq) from live_events o where o.run_id = ${id}), 0) + e.n,
                 (e.v->>'at')::bigint, e.v->>'type', e.v->>'agent', e.v->>'endpoint',
                 coalesce(e.v->'data', '{}'::jsonb)
          from jsonb_array_elements(${encodeJson(op, 'events', rows)}::jsonb) with ordinality as e(v, n)
        `.execute(trx);
      });
    },
    async readEvents(runId, opts = {}) {
      return readEventRows(db, 'live_events', 'readLiveEvents', runId, opts);
    },
  };
}

/**
 * A run's events from the committed log (`events`) or the live one (`live_events`): the two tables have the same
 * columns, so one query serves both readers.
 */
export async function readEventRows(
  db: Kysely<StoreSchema>,
  table: 'events' | 'live_events',
  op: string,
  runId: string,
  opts: ReadEventsOptions,
) {
  opts.signal?.throwIfAborted();
  const id = requireId(op, 'runId', runId);
  let query = db
    .selectFrom(table as 'events')
    .selectAll()
    .where('run_id', '=', id);
  if (opts.afterSeq !== undefined) {
    query = query.where('seq', '>', requireInt(op, 'afterSeq', opts.afterSeq, -INT4_MAX - 1, INT4_MAX));
  }
  if (opts.untilAt !== undefined) query = query.where('at', '<=', requireInt(op, 'untilAt', opts.untilAt, 0));
  query = query.orderBy('seq').orderBy('id');
  if (opts.limit !== undefined) query = query.limit(requireInt(op, 'limit', opts.limit, 1));
  return (await query.execute()).map(toEventRecord);
}
