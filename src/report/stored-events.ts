import type { RuntimeEvent } from '../core/runtime-event.ts';
import type { EventRecord } from '../store/store-types.ts';

/**
 * Turns rows of the `events` table back into runtime events, in log order (`seq`, then insertion).
 * Rows keep their `data` as stored; the report reads every field defensively, so a row of an unknown
 * type or with a missing field is skipped or counted as absent rather than trusted.
 *
 * @example
 * ```ts
 * const events = eventsFromRecords(await store.readEvents(runId));
 * const report = buildRunReport(run, events);
 * ```
 */
export function eventsFromRecords(records: readonly EventRecord[]): RuntimeEvent[] {
  return [...records].sort((a, b) => a.seq - b.seq || a.id - b.id).map(eventFromRecord);
}

/**
 * One row of the `events` table as the runtime event it recorded (a `data` that is not an object reads as `{}`).
 *
 * @example
 * ```ts
 * for (const r of await store.readEvents(runId, { afterSeq, limit: 500 })) listener(eventFromRecord(r));
 * ```
 */
export function eventFromRecord(r: EventRecord): RuntimeEvent {
  return {
    type: r.type,
    at: r.at,
    data: r.data && typeof r.data === 'object' ? r.data : {},
    ...(r.agent !== null ? { agent: r.agent } : {}),
    ...(r.endpoint !== null ? { endpoint: r.endpoint } : {}),
  } as RuntimeEvent;
}
