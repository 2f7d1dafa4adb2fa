import type { Selectable } from 'kysely';
import { decodeUsage } from '../core/token-usage.ts';
import type { Fault } from '../core/fault.ts';
import type { EventRecord, RoundRecord, RunRecord, TurnRecord } from './store-types.ts';
import type {
  EventsTable,
  RoundsTable,
  RunStatus,
  RunsTable,
  TurnOutcome,
  TurnsTable,
} from './store-schema.ts';
import { StoreInputError } from './store-errors.ts';

/**
 * Everything between plain caller data and SQL parameters: input checks, JSON encoding, and row → record
 * mapping that evens out the two drivers (bigint as string vs number). Values are stored as given: the
 * runtime builds what it stores from fields that cannot hold a key (fingerprints, ids, classified faults
 * sanitized where they entered), so the store never rewrites or refuses data because of what it says.
 */

export const RUN_STATUSES: readonly RunStatus[] = Object.freeze([
  'running',
  'completed',
  'failed',
  'interrupted',
]);
export const TURN_OUTCOMES: readonly TurnOutcome[] = Object.freeze([
  'answered',
  'fallback',
  'degraded',
  'failed',
  'no_agent',
]);

/** PostgreSQL rejects U+0000 in `text` and in JSONB strings; a model can still emit it. */
const NUL = '\u0000';
const REPLACEMENT = '\uFFFD';
/**
 * In JSON text U+0000 is the escape `\u0000`; an escaped backslash before `u0000` (`\\u0000`, the literal text
 * "\u0000") is not one. An odd run of backslashes is.
 */
const ESCAPED_NUL = /(?<!\\)((?:\\\\)*)\\u0000/g;

/**
 * JSON text for a JSONB parameter: the value's JSON form (Dates become ISO strings, `undefined` becomes
 * `null`), U+0000 replaced by U+FFFD (PostgreSQL refuses it). One `JSON.stringify`, then one scan of the text
 * (no copies of the value): this runs once per commit.
 */
export function encodeJson(operation: string, field: string, value: unknown): string {
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (e) {
    throw new StoreInputError({
      operation,
      field,
      message: `is not JSON-serializable (${e instanceof Error ? e.message : String(e)}); pass plain data`,
    });
  }
  if (text === undefined) return 'null';
  return text.includes('\\u0000') ? text.replace(ESCAPED_NUL, '$1\\ufffd') : text;
}

/** Free text: stored as given (U+0000 replaced), never refused. */
export function encodeText(value: string): string {
  return value.replaceAll(NUL, REPLACEMENT);
}

/** An identifier, stored verbatim: a non-empty string without U+0000. */
export function requireId(operation: string, field: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new StoreInputError({ operation, field, message: 'must be a non-empty string' });
  }
  if (value.includes(NUL)) {
    throw new StoreInputError({ operation, field, message: 'must not contain the NUL character' });
  }
  return value;
}

/** Same as {@link requireId} but `null`/`undefined` pass as `null`. */
export function optionalId(operation: string, field: string, value: unknown): string | null {
  return value === undefined || value === null ? null : requireId(operation, field, value);
}

/** An integer in `[min, max]`. */
export function requireInt(
  operation: string,
  field: string,
  value: unknown,
  min: number,
  max = Number.MAX_SAFE_INTEGER,
): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min || value > max) {
    throw new StoreInputError({
      operation,
      field,
      message: `must be an integer from ${min} to ${max === Number.MAX_SAFE_INTEGER ? 'MAX_SAFE_INTEGER' : max}, got ${String(value)}`,
    });
  }
  return value;
}

/** Upper bound of a PostgreSQL `integer` column. */
export const INT4_MAX = 2_147_483_647;

export function requireOneOf<T extends string>(
  operation: string,
  field: string,
  value: unknown,
  allowed: readonly T[],
): T {
  if (typeof value !== 'string' || !(allowed as readonly string[]).includes(value)) {
    throw new StoreInputError({
      operation,
      field,
      message: `must be one of ${allowed.map((a) => `'${a}'`).join(', ')}, got ${JSON.stringify(value)}`,
    });
  }
  return value as T;
}

/** `timestamptz` comes back as a Date from both drivers; be lenient about strings anyway. */
export function toMs(value: Date | string | number): number {
  return value instanceof Date ? value.getTime() : new Date(value).getTime();
}

/** `bigint` is a string from `pg` and a number from PGlite. */
export function toNumber(value: string | number | bigint): number {
  return typeof value === 'number' ? value : Number(value);
}

export function toRunRecord(row: Selectable<RunsTable>): RunRecord {
  return Object.freeze({
    runId: row.run_id,
    scenario: row.scenario,
    config: row.config,
    status: row.status,
    currentRound: row.current_round,
    totalRounds: row.total_rounds,
    machineVersion: row.machine_version,
    createdAt: toMs(row.created_at),
    updatedAt: toMs(row.updated_at),
    finishedAt: row.finished_at === null ? null : toMs(row.finished_at),
    failure: row.failure ?? null,
  });
}

export function toRoundRecord(row: Selectable<RoundsTable>): RoundRecord {
  return Object.freeze({
    runId: row.run_id,
    round: row.round,
    committedAt: toMs(row.committed_at),
    summary: row.summary,
    health: row.health ?? null,
  });
}

export function toTurnRecord(row: Selectable<TurnsTable>): TurnRecord {
  return Object.freeze({
    runId: row.run_id,
    round: row.round,
    position: row.position,
    itemId: row.item_id,
    agent: row.agent,
    agentSeq: row.agent_seq,
    prompt: row.prompt,
    answer: row.answer,
    outcome: row.outcome,
    endpointId: row.endpoint_id,
    degraded: row.degraded,
    // Rows stored before usage could be unknown hold two numbers: they decode as reported (what they claimed).
    usage: decodeUsage(row.usage),
    faults: (Array.isArray(row.faults) ? row.faults : []) as Fault[],
    waitMs: row.wait_ms,
    idempotencyKey: row.idempotency_key,
  });
}

export function toEventRecord(row: Selectable<EventsTable>): EventRecord {
  return Object.freeze({
    id: toNumber(row.id),
    runId: row.run_id,
    seq: row.seq,
    at: toNumber(row.at),
    type: row.type,
    agent: row.agent,
    endpoint: row.endpoint,
    data: row.data,
  });
}

/** Splits `items` into chunks small enough for one statement (PostgreSQL allows 65 535 parameters). */
export function chunk<T>(items: readonly T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}
