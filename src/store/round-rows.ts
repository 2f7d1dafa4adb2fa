import type { Kysely } from 'kysely';
import { type CommittedStates, commitRoundStatement } from './round-commit.ts';
import { requireId, toRoundRecord } from './store-codec.ts';
import type { StoreSchema } from './store-schema.ts';
import type { CommitRoundInput, RoundRecord, StoreCallOptions } from './store-types.ts';

/*
 * The rounds' rows (`rounds`): committed exactly once, in one statement (round-commit.ts), then read back in order
 * and for the endpoints' health of the last one. Part of the run store (see run-store.ts).
 */

/**
 * The run store's round methods. `committedStates` is the store's own memory of the agent states it last committed
 * per run (a commit writes only the rows that changed since).
 */
export function roundMethods(
  db: Kysely<StoreSchema>,
  now: () => Date,
  committedStates: CommittedStates,
): {
  commitRound(input: CommitRoundInput, opts?: StoreCallOptions): Promise<RoundRecord>;
  listRounds(runId: string, opts?: StoreCallOptions): Promise<RoundRecord[]>;
  lastHealth(runId: string, opts?: StoreCallOptions): Promise<unknown>;
} {
  return {
    commitRound(input: CommitRoundInput, opts: StoreCallOptions = {}) {
      return commitRoundStatement(db, input, now(), committedStates, opts.signal);
    },

    async listRounds(runId: string, opts: StoreCallOptions = {}) {
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

    async lastHealth(runId: string, opts: StoreCallOptions = {}) {
      opts.signal?.throwIfAborted();
      const id = requireId('lastHealth', 'runId', runId);
      const row = await db
        .selectFrom('rounds')
        .select('health')
        .where('run_id', '=', id)
        .orderBy('round', 'desc')
        .limit(1)
        .executeTakeFirst();
      return row?.health ?? undefined;
    },
  };
}
