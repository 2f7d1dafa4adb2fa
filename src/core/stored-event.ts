import type { RuntimeEvent } from './runtime-event.ts';

/*
 * The one decoder of the event log: a row of the `events` table back into the runtime event it recorded. The
 * report, the planner, a workers run's parent (its live view and /metrics) and the visualizer (server and page)
 * all read the log through it; each had its own copy, and they disagreed on a `data` that is not an object and on
 * an `at` sent as text.
 */

/** A row of the event log as it is read back: the store's `EventRecord`, or that row as JSON over HTTP. */
export interface StoredEventRow {
  readonly seq?: number;
  /** Insertion id: ties inside one `seq` are read in this order. */
  readonly id?: number;
  readonly at: number;
  readonly type: string;
  readonly agent?: string | null;
  readonly endpoint?: string | null;
  readonly data?: unknown;
}

/**
 * One row as the runtime event it recorded: nulls become absent fields, a `data` that is not an object reads as
 * `{}`. Readers still read every field defensively: a row of an unknown type is theirs to skip.
 *
 * @example
 * ```ts
 * for (const r of await store.readEvents(runId, { afterSeq, limit: 500 })) listener(eventFromRecord(r));
 * ```
 */
export function eventFromRecord(row: StoredEventRow): RuntimeEvent {
  return {
    type: row.type,
    at: Number(row.at),
    data: row.data !== null && typeof row.data === 'object' ? row.data : {},
    ...(row.agent != null ? { agent: row.agent } : {}),
    ...(row.endpoint != null ? { endpoint: row.endpoint } : {}),
  } as RuntimeEvent;
}

/**
 * Rows as runtime events in log order (`seq`, then insertion id).
 *
 * @example
 * ```ts
 * const report = buildRunReport(run, eventsFromRecords(await store.readEvents(runId)));
 * ```
 */
export function eventsFromRecords(rows: readonly StoredEventRow[]): RuntimeEvent[] {
  return [...rows]
    .sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0) || (a.id ?? 0) - (b.id ?? 0))
    .map(eventFromRecord);
}
