import type { Kysely } from 'kysely';
import { type Clock, systemClock } from '../clock/clock.ts';
import { describeSnapshotProblem } from './agent-snapshot-schema.ts';
import type { BreakwaterDatabase } from './open-database.ts';
import { RoundCommitConflictError } from './round-commit-conflict-error.ts';
import { SnapshotRestoreError } from './snapshot-restore-error.ts';
import {
  INT4_MAX,
  RUN_STATUSES,
  TURN_OUTCOMES,
  asSnapshotData,
  chunk,
  encodeJson,
  encodeText,
  optionalId,
  requireId,
  requireInt,
  requireOneOf,
  toEventRecord,
  toRoundRecord,
  toRunRecord,
  toTurnRecord,
} from './store-codec.ts';
import { RunExistsError, RunNotFoundError, StoreInputError } from './store-errors.ts';
import type { RunStatus, StoreSchema } from './store-schema.ts';
import type {
  AgentSnapshotRecord,
  CommitRoundInput,
  CreateRunInput,
  EventInput,
  EventRecord,
  ListRunsOptions,
  LoadSnapshotsOptions,
  ReadEventsOptions,
  RememberCallInput,
  RoundRecord,
  RunRecord,
  StoreCallOptions,
  TurnRecord,
} from './store-types.ts';

/**
 * The runtime's durable state: runs, rounds committed exactly once, the call memo and the event log.
 * Plain data in and out, stored as given (build it from fields that cannot hold a key).
 *
 * @example
 * ```ts
 * const store = createRunStore(await openDatabase());
 * await store.createRun({ runId, scenario: 'monday-briefing', totalRounds: 3, machineVersion: 'agent@1' });
 * const memo = await store.recallCall(key) ?? await store.rememberCall({ runId, idempotencyKey: key, result: await engine.call(req) });
 * await store.commitRound({ runId, round: 1, turns, snapshots });
 * ```
 */
export interface RunStore {
  /**
   * Creates a run in status `running` with `currentRound` 0.
   * @throws {RunExistsError} when the id is taken
   * @example `await store.createRun({ runId: 'r-1', scenario: 'demo', totalRounds: 3, machineVersion: 'agent@1' })`
   */
  createRun(input: CreateRunInput, options?: StoreCallOptions): Promise<RunRecord>;
  /**
   * The run, or `undefined`.
   * @example `const next = ((await store.getRun('r-1'))?.currentRound ?? 0) + 1`
   */
  getRun(runId: string, options?: StoreCallOptions): Promise<RunRecord | undefined>;
  /**
   * Runs, newest first.
   * @example `const resumable = await store.listRuns({ status: 'interrupted' })`
   */
  listRuns(options?: ListRunsOptions): Promise<RunRecord[]>;
  /**
   * Sets the status; `finishedAt` is set for `completed`/`failed` and cleared otherwise.
   * @throws {RunNotFoundError}
   * @example `await store.setRunStatus('r-1', 'interrupted')`
   */
  setRunStatus(runId: string, status: RunStatus, options?: StoreCallOptions): Promise<RunRecord>;
  /**
   * Memoizes a successful call under its idempotency key, at once (not at round commit). Insert-or-ignore:
   * the value stored first wins and is returned to every caller, so two racers agree.
   * @returns the stored value (its JSON form)
   * @example `const result = await store.rememberCall({ runId, idempotencyKey: req.idempotencyKey, result: await engine.call(req) })`
   */
  rememberCall<T>(input: RememberCallInput<T>, options?: StoreCallOptions): Promise<T>;
  /**
   * The memoized result for a key, or `undefined`.
   * @example `const cached = await store.recallCall<EngineResult>(req.idempotencyKey)`
   */
  recallCall<T = unknown>(idempotencyKey: string, options?: StoreCallOptions): Promise<T | undefined>;
  /**
   * The memoized results among `keys`, keyed by idempotency key (missing keys are absent).
   * @example `const done = await store.recallCalls(turns.map((t) => t.key))`
   */
  recallCalls<T = unknown>(keys: readonly string[], options?: StoreCallOptions): Promise<Record<string, T>>;
  /**
   * Commits a round in ONE transaction: the round row, its turns, its snapshots, and a compare-and-set
   * of `runs.current_round` from `round - 1` to `round`. All or nothing.
   * @throws {RoundCommitConflictError} when the round is already committed, out of order or the run
   *   is missing — nothing is written
   * @throws {StoreInputError} on duplicate (itemId, agent) turns, duplicate agents, a malformed snapshot
   * @example `await store.commitRound({ runId, round: 2, turns, snapshots, summary: { answered: 5 } })`
   */
  commitRound(input: CommitRoundInput, options?: StoreCallOptions): Promise<RoundRecord>;
  /**
   * Committed rounds of a run, in order.
   * @example `const rounds = await store.listRounds(runId)`
   */
  listRounds(runId: string, options?: StoreCallOptions): Promise<RoundRecord[]>;
  /**
   * Committed turns, by round then by the order they were committed in.
   * @example `const lastRound = await store.listTurns(runId, { round: run.currentRound })`
   */
  listTurns(runId: string, options?: StoreCallOptions & { readonly round?: number }): Promise<TurnRecord[]>;
  /**
   * Per agent, its snapshot from the latest round it committed one in, validated. Reads only.
   * @throws {SnapshotRestoreError} when a snapshot is corrupt or from another machine version
   * @throws {RunNotFoundError}
   * @example `const byAgent = await store.loadLatestSnapshots(runId, { machineVersion: AGENT_MACHINE_VERSION })`
   */
  loadLatestSnapshots(
    runId: string,
    options: LoadSnapshotsOptions,
  ): Promise<Record<string, AgentSnapshotRecord>>;
  /**
   * Appends events in batched inserts (all of one call in one transaction).
   * @example `await store.appendEvents(runId, [{ seq: 1, at: clock.now(), type: 'COOLING', agent: 'analyst', endpoint: 'primary', data: { until } }])`
   */
  appendEvents(runId: string, events: readonly EventInput[], options?: StoreCallOptions): Promise<void>;
  /**
   * Events of a run in `seq` order, optionally after a seq, up to a time, at most `limit`.
   * @example `const page = await store.readEvents(runId, { afterSeq: lastSeen, limit: 500 })`
   */
  readEvents(runId: string, options?: ReadEventsOptions): Promise<EventRecord[]>;
}

/**
 * Options of {@link createRunStore}.
 *
 * @example
 * ```ts
 * createRunStore(database, { clock: createManualClock(0) });
 * ```
 */
export interface RunStoreOptions {
  /** Source of `created_at`/`updated_at`/`committed_at`. Default {@link systemClock}. */
  readonly clock?: Clock;
}

const TURN_CHUNK = 1_000; // 14 parameters a row
const SNAPSHOT_CHUNK = 2_000; // 5 parameters a row
const EVENT_CHUNK = 2_000; // 8 parameters a row
const KEY_CHUNK = 5_000;

/**
 * Creates the {@link RunStore} over an open database (PGlite or PostgreSQL: same queries).
 *
 * @example
 * ```ts
 * const database = await openDatabase({ dataDir: ':memory:' });
 * const store = createRunStore(database, { clock: createManualClock(Date.parse('2026-08-17T07:00:00Z')) });
 * ```
 */
export function createRunStore(
  database: Pick<BreakwaterDatabase, 'db'>,
  options: RunStoreOptions = {},
): RunStore {
  const db: Kysely<StoreSchema> = database.db;
  const clock = options.clock ?? systemClock;
  const now = () => new Date(clock.now());

  async function requireRun(runId: string): Promise<void> {
    const row = await db.selectFrom('runs').select('run_id').where('run_id', '=', runId).executeTakeFirst();
    if (!row) throw new RunNotFoundError(runId);
  }

  return {
    async createRun(input, opts = {}) {
      const op = 'createRun';
      opts.signal?.throwIfAborted();
      const runId = requireId(op, 'runId', input.runId);
      const at = now();
      const row = await db
        .insertInto('runs')
        .values({
          run_id: runId,
          scenario: encodeText(String(input.scenario ?? '')),
          config: encodeJson(op, 'config', input.config ?? {}),
          status: 'running',
          current_round: 0,
          total_rounds: requireInt(op, 'totalRounds', input.totalRounds, 0, INT4_MAX),
          machine_version: requireId(op, 'machineVersion', input.machineVersion),
          created_at: at,
          updated_at: at,
          finished_at: null,
        })
        .onConflict((oc) => oc.column('run_id').doNothing())
        .returningAll()
        .executeTakeFirst();
      if (!row) throw new RunExistsError(runId);
      return toRunRecord(row);
    },

    async getRun(runId, opts = {}) {
      opts.signal?.throwIfAborted();
      const id = requireId('getRun', 'runId', runId);
      const row = await db.selectFrom('runs').selectAll().where('run_id', '=', id).executeTakeFirst();
      return row ? toRunRecord(row) : undefined;
    },

    async listRuns(opts = {}) {
      opts.signal?.throwIfAborted();
      let query = db.selectFrom('runs').selectAll().orderBy('created_at', 'desc').orderBy('run_id');
      if (opts.status !== undefined) {
        query = query.where('status', '=', requireOneOf('listRuns', 'status', opts.status, RUN_STATUSES));
      }
      if (opts.limit !== undefined) query = query.limit(requireInt('listRuns', 'limit', opts.limit, 1));
      return (await query.execute()).map(toRunRecord);
    },

    async setRunStatus(runId, status, opts = {}) {
      const op = 'setRunStatus';
      opts.signal?.throwIfAborted();
      const id = requireId(op, 'runId', runId);
      const next = requireOneOf(op, 'status', status, RUN_STATUSES);
      const at = now();
      const row = await db
        .updateTable('runs')
        .set({
          status: next,
          updated_at: at,
          finished_at: next === 'completed' || next === 'failed' ? at : null,
        })
        .where('run_id', '=', id)
        .returningAll()
        .executeTakeFirst();
      if (!row) throw new RunNotFoundError(id);
      return toRunRecord(row);
    },

    async rememberCall<T>(input: RememberCallInput<T>, opts: StoreCallOptions = {}): Promise<T> {
      const op = 'rememberCall';
      opts.signal?.throwIfAborted();
      const key = requireId(op, 'idempotencyKey', input.idempotencyKey);
      const values = {
        idempotency_key: key,
        run_id: requireId(op, 'runId', input.runId),
        result: encodeJson(op, 'result', input.result),
        created_at: now(),
      };
      // The row can only vanish between the two statements if someone deletes memos concurrently.
      for (let attempt = 0; attempt < 3; attempt++) {
        const inserted = await db
          .insertInto('call_results')
          .values(values)
          .onConflict((oc) => oc.column('idempotency_key').doNothing())
          .returning('result')
          .executeTakeFirst();
        if (inserted) return inserted.result as T;
        const existing = await db
          .selectFrom('call_results')
          .select('result')
          .where('idempotency_key', '=', key)
          .executeTakeFirst();
        if (existing) return existing.result as T;
        opts.signal?.throwIfAborted();
      }
      throw new Error(`rememberCall: the memo for "${key}" was deleted while it was being written`);
    },

    async recallCall<T = unknown>(
      idempotencyKey: string,
      opts: StoreCallOptions = {},
    ): Promise<T | undefined> {
      opts.signal?.throwIfAborted();
      const key = requireId('recallCall', 'idempotencyKey', idempotencyKey);
      const row = await db
        .selectFrom('call_results')
        .select('result')
        .where('idempotency_key', '=', key)
        .executeTakeFirst();
      return row ? (row.result as T) : undefined;
    },

    async recallCalls<T = unknown>(keys: readonly string[], opts: StoreCallOptions = {}) {
      const unique = [...new Set(keys.map((k, i) => requireId('recallCalls', `keys[${i}]`, k)))];
      const entries: [string, T][] = [];
      for (const part of chunk(unique, KEY_CHUNK)) {
        opts.signal?.throwIfAborted();
        const rows = await db
          .selectFrom('call_results')
          .select(['idempotency_key', 'result'])
          .where('idempotency_key', 'in', part)
          .execute();
        for (const row of rows) entries.push([row.idempotency_key, row.result as T]);
      }
      return Object.fromEntries(entries) as Record<string, T>;
    },

    async commitRound(input, opts = {}) {
      const op = 'commitRound';
      opts.signal?.throwIfAborted();
      const runId = requireId(op, 'runId', input.runId);
      const round = requireInt(op, 'round', input.round, 1, INT4_MAX);
      if (!Array.isArray(input.turns))
        throw new StoreInputError({ operation: op, field: 'turns', message: 'must be an array' });
      if (!Array.isArray(input.snapshots)) {
        throw new StoreInputError({ operation: op, field: 'snapshots', message: 'must be an array' });
      }

      // Encode and check everything before the transaction: no CPU work while holding the run's row lock.
      const turnKeys = new Set<string>();
      const turnRows = input.turns.map((t, i) => {
        const f = (name: string) => `turns[${i}].${name}`;
        const itemId = requireId(op, f('itemId'), t.itemId);
        const agent = requireId(op, f('agent'), t.agent);
        if (t.faults !== undefined && !Array.isArray(t.faults)) {
          throw new StoreInputError({
            operation: op,
            field: f('faults'),
            message: 'must be an array of faults',
          });
        }
        const key = JSON.stringify([itemId, agent]);
        if (turnKeys.has(key)) {
          throw new StoreInputError({
            operation: op,
            field: `turns[${i}]`,
            message: `repeats item "${itemId}" for agent "${agent}"; a round holds one turn per (item, agent)`,
          });
        }
        turnKeys.add(key);
        return {
          run_id: runId,
          round,
          item_id: itemId,
          agent,
          position: i,
          prompt: encodeJson(op, f('prompt'), t.prompt),
          answer: encodeJson(op, f('answer'), t.answer ?? null),
          outcome: requireOneOf(op, f('outcome'), t.outcome, TURN_OUTCOMES),
          endpoint_id: optionalId(op, f('endpointId'), t.endpointId),
          degraded: t.degraded === true,
          usage: encodeJson(op, f('usage'), t.usage ?? null),
          faults: encodeJson(op, f('faults'), t.faults ?? []),
          wait_ms: requireInt(op, f('waitMs'), Math.round(t.waitMs ?? 0), 0, INT4_MAX),
          idempotency_key: optionalId(op, f('idempotencyKey'), t.idempotencyKey),
        };
      });
      const agents = new Set<string>();
      const snapshotRows = input.snapshots.map((s, i) => {
        const agent = requireId(op, `snapshots[${i}].agent`, s.agent);
        if (agents.has(agent)) {
          throw new StoreInputError({
            operation: op,
            field: `snapshots[${i}]`,
            message: `repeats agent "${agent}"; a round holds one snapshot per agent`,
          });
        }
        agents.add(agent);
        const data = encodeJson(op, `snapshots[${i}].data`, s.data);
        const problem = describeSnapshotProblem(JSON.parse(data));
        if (problem) {
          throw new StoreInputError({
            operation: op,
            field: `snapshots[${i}].data`,
            message: `is not an agent snapshot (${problem}); it could never be restored`,
          });
        }
        return {
          agent,
          data,
          machineVersion: optionalId(op, `snapshots[${i}].machineVersion`, s.machineVersion),
        };
      });
      const summary = encodeJson(op, 'summary', input.summary ?? null);
      const committedAt = now();

      return db.transaction().execute(async (trx) => {
        // The compare-and-set goes first: it locks the run's row, so a concurrent commit of the same
        // round waits here and then matches nothing.
        const cas = await trx
          .updateTable('runs')
          .set({ current_round: round, updated_at: committedAt })
          .where('run_id', '=', runId)
          .where('current_round', '=', round - 1)
          .returning('machine_version')
          .executeTakeFirst();
        if (!cas) {
          const run = await trx
            .selectFrom('runs')
            .select('current_round')
            .where('run_id', '=', runId)
            .executeTakeFirst();
          throw new RoundCommitConflictError({
            runId,
            round,
            currentRound: run?.current_round,
            reason: !run
              ? 'run_not_found'
              : run.current_round >= round
                ? 'already_committed'
                : 'out_of_order',
          });
        }
        const inserted = await trx
          .insertInto('rounds')
          .values({ run_id: runId, round, committed_at: committedAt, summary })
          .onConflict((oc) => oc.columns(['run_id', 'round']).doNothing())
          .returningAll()
          .executeTakeFirst();
        if (!inserted) {
          throw new RoundCommitConflictError({
            runId,
            round,
            currentRound: round - 1,
            reason: 'already_committed',
          });
        }
        for (const part of chunk(turnRows, TURN_CHUNK)) {
          opts.signal?.throwIfAborted();
          await trx.insertInto('turns').values(part).execute();
        }
        for (const part of chunk(snapshotRows, SNAPSHOT_CHUNK)) {
          opts.signal?.throwIfAborted();
          await trx
            .insertInto('agent_snapshots')
            .values(
              part.map((s) => ({
                run_id: runId,
                agent: s.agent,
                round,
                data: s.data,
                machine_version: s.machineVersion ?? cas.machine_version,
              })),
            )
            .execute();
        }
        opts.signal?.throwIfAborted();
        return toRoundRecord(inserted);
      });
    },

    async listRounds(runId, opts = {}) {
      opts.signal?.throwIfAborted();
      const id = requireId('listRounds', 'runId', runId);
      const rows = await db
        .selectFrom('rounds')
        .selectAll()
        .where('run_id', '=', id)
        .orderBy('round')
        .execute();
      return rows.map(toRoundRecord);
    },

    async listTurns(runId, opts = {}) {
      opts.signal?.throwIfAborted();
      const id = requireId('listTurns', 'runId', runId);
      let query = db.selectFrom('turns').selectAll().where('run_id', '=', id);
      if (opts.round !== undefined)
        query = query.where('round', '=', requireInt('listTurns', 'round', opts.round, 0));
      const rows = await query.orderBy('round').orderBy('position').execute();
      return rows.map(toTurnRecord);
    },

    async loadLatestSnapshots(runId, opts) {
      const op = 'loadLatestSnapshots';
      opts.signal?.throwIfAborted();
      const id = requireId(op, 'runId', runId);
      const expected = requireId(op, 'machineVersion', opts?.machineVersion);
      await requireRun(id);
      opts.signal?.throwIfAborted();
      const rows = await db
        .selectFrom('agent_snapshots')
        .selectAll()
        .distinctOn('agent')
        .where('run_id', '=', id)
        .orderBy('agent')
        .orderBy('round', 'desc')
        .execute();
      const out: [string, AgentSnapshotRecord][] = [];
      for (const row of rows) {
        // Version first: a snapshot from another version may legitimately have another shape.
        if (row.machine_version !== expected) {
          throw new SnapshotRestoreError({
            runId: id,
            agent: row.agent,
            round: row.round,
            reason: 'machine_version_mismatch',
            storedVersion: row.machine_version,
            expectedVersion: expected,
          });
        }
        const problem = describeSnapshotProblem(row.data);
        if (problem) {
          throw new SnapshotRestoreError({
            runId: id,
            agent: row.agent,
            round: row.round,
            reason: 'corrupt',
            detail: problem,
          });
        }
        out.push([
          row.agent,
          Object.freeze({
            runId: id,
            agent: row.agent,
            round: row.round,
            machineVersion: row.machine_version,
            data: asSnapshotData(row.data),
          }),
        ]);
      }
      return Object.fromEntries(out);
    },

    async appendEvents(runId, events, opts = {}) {
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

    async readEvents(runId, opts = {}) {
      const op = 'readEvents';
      opts.signal?.throwIfAborted();
      const id = requireId(op, 'runId', runId);
      let query = db.selectFrom('events').selectAll().where('run_id', '=', id);
      if (opts.afterSeq !== undefined) {
        query = query.where('seq', '>', requireInt(op, 'afterSeq', opts.afterSeq, -INT4_MAX - 1, INT4_MAX));
      }
      if (opts.untilAt !== undefined)
        query = query.where('at', '<=', requireInt(op, 'untilAt', opts.untilAt, 0));
      query = query.orderBy('seq').orderBy('id');
      if (opts.limit !== undefined) query = query.limit(requireInt(op, 'limit', opts.limit, 1));
      return (await query.execute()).map(toEventRecord);
    },
  };
}
