import type { Kysely } from 'kysely';
import {
  INT4_MAX,
  RUN_STATUSES,
  encodeJson,
  encodeText,
  requireId,
  requireInt,
  requireOneOf,
  toRunRecord,
} from './store-codec.ts';
import { RunExistsError, RunNotFoundError } from './store-errors.ts';
import type { RunStatus, StoreSchema } from './store-schema.ts';
import type { CreateRunInput, ListRunsOptions, RunRecord, StoreCallOptions } from './store-types.ts';

/*
 * The runs' rows (`runs`): a run created once, read, listed and moved from status to status. Part of the run store
 * (see run-store.ts); its `current_round` moves only with a round's commit (round-commit.ts).
 */

/** Throws {@link RunNotFoundError} unless the run exists. */
export async function requireRun(db: Kysely<StoreSchema>, runId: string): Promise<void> {
  const row = await db.selectFrom('runs').select('run_id').where('run_id', '=', runId).executeTakeFirst();
  if (!row) throw new RunNotFoundError(runId);
}

/** The run store's run methods. */
export function runMethods(
  db: Kysely<StoreSchema>,
  now: () => Date,
): {
  createRun(input: CreateRunInput, opts?: StoreCallOptions): Promise<RunRecord>;
  getRun(runId: string, opts?: StoreCallOptions): Promise<RunRecord | undefined>;
  listRuns(opts?: ListRunsOptions): Promise<RunRecord[]>;
  setRunStatus(
    runId: string,
    status: RunStatus,
    opts?: StoreCallOptions & { readonly failure?: string },
  ): Promise<RunRecord>;
} {
  return {
    async createRun(input: CreateRunInput, opts: StoreCallOptions = {}) {
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

    async getRun(runId: string, opts: StoreCallOptions = {}) {
      opts.signal?.throwIfAborted();
      const id = requireId('getRun', 'runId', runId);
      const row = await db.selectFrom('runs').selectAll().where('run_id', '=', id).executeTakeFirst();
      return row ? toRunRecord(row) : undefined;
    },

    async listRuns(opts: ListRunsOptions = {}) {
      opts.signal?.throwIfAborted();
      let query = db.selectFrom('runs').selectAll().orderBy('created_at', 'desc').orderBy('run_id');
      if (opts.status !== undefined) {
        query = query.where('status', '=', requireOneOf('listRuns', 'status', opts.status, RUN_STATUSES));
      }
      if (opts.limit !== undefined) query = query.limit(requireInt('listRuns', 'limit', opts.limit, 1));
      return (await query.execute()).map(toRunRecord);
    },

    async setRunStatus(
      runId: string,
      status: RunStatus,
      opts: StoreCallOptions & { readonly failure?: string } = {},
    ) {
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
          failure: next === 'failed' && opts.failure ? encodeText(opts.failure) : null,
        })
        .where('run_id', '=', id)
        .returningAll()
        .executeTakeFirst();
      if (!row) throw new RunNotFoundError(id);
      return toRunRecord(row);
    },
  };
}
