import type { ColumnType, Generated } from 'kysely';

/**
 * The database as kysely sees it after every migration in `migrations/` has run. Column names are
 * snake_case as in SQL; the run store maps rows to camelCase plain records.
 *
 * JSONB columns are written as JSON text and read back parsed, so
 * their insert/update type is `string` and their select type is `unknown` until validated.
 */

/** A JSONB column: parsed on select, written as JSON text. */
export type JsonbColumn = ColumnType<unknown, string, string>;
/** A nullable JSONB column. */
export type NullableJsonbColumn = ColumnType<unknown | null, string | null, string | null>;
/** `timestamptz`: both drivers return a `Date`; we write `Date`s from the injected clock. */
export type TimestampColumn = ColumnType<Date, Date, Date>;
/** `bigint`: `pg` returns it as a string, PGlite as a number; the store normalizes to number. */
export type BigintColumn = ColumnType<string | number, number, number>;

/**
 * Lifecycle of a run. `interrupted` runs can be resumed; `completed` and `failed` are final.
 *
 * @example
 * ```ts
 * await store.setRunStatus(runId, 'interrupted' satisfies RunStatus);
 * ```
 */
export type RunStatus = 'running' | 'completed' | 'failed' | 'interrupted';

/**
 * How a turn ended. `no_agent` = operational job done by plain code, no LLM involved.
 *
 * @example
 * ```ts
 * const outcome: TurnOutcome = result.degraded ? 'degraded' : 'answered';
 * ```
 */
export type TurnOutcome = 'answered' | 'fallback' | 'degraded' | 'failed' | 'no_agent';

/** `runs`: one row per run; `current_round` is the last committed round (0 = none). */
export interface RunsTable {
  run_id: string;
  scenario: string;
  config: JsonbColumn;
  status: RunStatus;
  current_round: number;
  total_rounds: number;
  machine_version: string;
  created_at: TimestampColumn;
  updated_at: TimestampColumn;
  finished_at: ColumnType<Date | null, Date | null, Date | null>;
  /** Why the run failed (one line), when it did. */
  failure: ColumnType<string | null, string | null | undefined, string | null>;
  /** The process driving the run (`host:pid:nonce`), while its lease is alive. */
  lease_holder: ColumnType<string | null, string | null | undefined, string | null>;
  lease_expires_at: ColumnType<Date | null, Date | null | undefined, Date | null>;
}

/** `rounds`: the existence of a row means the round is committed; (run_id, round) is the primary key. */
export interface RoundsTable {
  run_id: string;
  round: number;
  committed_at: TimestampColumn;
  summary: NullableJsonbColumn;
  /** Every endpoint's health when the round committed (breaker, cooldown, disable, buckets, AIMD). */
  health: ColumnType<unknown | null, string | null | undefined, string | null>;
}

/** `turns`: one per (run_id, round, item_id, agent), the primary key. */
export interface TurnsTable {
  run_id: string;
  round: number;
  item_id: string;
  agent: string;
  /** The order in which this agent finished its turns: 1, 2, 3, … per (run, agent); unique. */
  agent_seq: number;
  /** Order of the turn inside its round, as the runtime handed them over. */
  position: number;
  prompt: JsonbColumn;
  answer: NullableJsonbColumn;
  outcome: TurnOutcome;
  endpoint_id: string | null;
  degraded: boolean;
  usage: NullableJsonbColumn;
  faults: JsonbColumn;
  wait_ms: number;
  idempotency_key: string | null;
}

/** `agent_snapshots`: one per (run_id, agent, round), the primary key. */
export interface AgentSnapshotsTable {
  run_id: string;
  agent: string;
  round: number;
  data: JsonbColumn;
  machine_version: string;
}

/** `agent_states`: one per (run_id, agent), upserted when the agent's state changes. */
export interface AgentStatesTable {
  run_id: string;
  agent: string;
  machine_version: string;
  /** XState persisted snapshot without settings, utterances and last turn (those live elsewhere). */
  snapshot: JsonbColumn;
  slots: JsonbColumn;
  tool_results: JsonbColumn;
  /** The round in which this row last changed. */
  last_round: number;
}

/** `call_results`: the memo of successful engine/tool calls, keyed by idempotency key. */
export interface CallResultsTable {
  idempotency_key: string;
  run_id: string;
  result: JsonbColumn;
  created_at: TimestampColumn;
}

/**
 * `events`: append-only log, read in `(run_id, seq)` order. Exactly what was committed: a round's events are
 * written by the statement that commits it (0007).
 */
export interface EventsTable {
  id: Generated<string | number>;
  run_id: string;
  seq: number;
  at: BigintColumn;
  type: string;
  agent: string | null;
  endpoint: string | null;
  data: JsonbColumn;
}

/** `round_parts` (0004): one agent's turns of one round, claimed and staged by a worker process. */
export interface RoundPartsTable {
  run_id: string;
  round: number;
  agent: string;
  holder: string;
  generation: Generated<number>;
  expires_at: TimestampColumn;
  done: Generated<boolean>;
  turns: NullableJsonbColumn;
  state: NullableJsonbColumn;
  /** (0007) The worker's events of the part, staged with it; committed with the round. */
  events: ColumnType<unknown | null, string | null | undefined, string | null>;
}

/**
 * Every table of the durable store, for `Kysely<StoreSchema>`.
 *
 * @example
 * ```ts
 * const { db } = await openDatabase();
 * const rows = await db.selectFrom('runs').select(['run_id', 'status']).execute();
 * ```
 */
export interface StoreSchema {
  runs: RunsTable;
  rounds: RoundsTable;
  turns: TurnsTable;
  /** Legacy (0001): read by nothing; kept so a migrated store loses nothing. */
  agent_snapshots: AgentSnapshotsTable;
  agent_states: AgentStatesTable;
  call_results: CallResultsTable;
  events: EventsTable;
  /** (0007) What the workers of a run hear as it happens: the live view of `run --workers`, never history. */
  live_events: EventsTable;
  round_parts: RoundPartsTable;
}
