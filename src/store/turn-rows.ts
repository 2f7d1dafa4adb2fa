import { type Kysely, type Selectable, sql } from 'kysely';
import { INT4_MAX, TURN_OUTCOMES, requireId, requireInt, requireOneOf, toTurnRecord } from './store-codec.ts';
import type { StoreSchema, TurnsTable } from './store-schema.ts';
import type { RecentTurnsOptions, StoreCallOptions, TurnRecord } from './store-types.ts';

/*
 * The committed turns' rows (`turns`): written by a round's commit (round-commit.ts), read back whole for a report
 * and per agent for an agent's window of recent turns. Part of the run store (see run-store.ts).
 */

/** Every column of `turns` but the prompt (listTurns reads the prompt only when asked). */
const TURN_COLUMNS_BUT_PROMPT = [
  'run_id',
  'round',
  'item_id',
  'agent',
  'agent_seq',
  'position',
  'answer',
  'outcome',
  'endpoint_id',
  'degraded',
  'usage',
  'faults',
  'wait_ms',
  'idempotency_key',
] as const;

/** The run store's turn methods. */
export function turnMethods(db: Kysely<StoreSchema>): {
  listTurns(
    runId: string,
    opts?: StoreCallOptions & { readonly round?: number; readonly withPrompts?: boolean },
  ): Promise<TurnRecord[]>;
  recentTurns(runId: string, opts: RecentTurnsOptions): Promise<Record<string, TurnRecord[]>>;
} {
  return {
    async listTurns(
      runId: string,
      opts: StoreCallOptions & { readonly round?: number; readonly withPrompts?: boolean } = {},
    ) {
      opts.signal?.throwIfAborted();
      const id = requireId('listTurns', 'runId', runId);
      let query = db
        .selectFrom('turns')
        .select(TURN_COLUMNS_BUT_PROMPT)
        .select(opts.withPrompts === false ? sql<unknown>`null`.as('prompt') : 'prompt')
        .where('run_id', '=', id);
      if (opts.round !== undefined)
        query = query.where('round', '=', requireInt('listTurns', 'round', opts.round, 0));
      const rows = await query.orderBy('round').orderBy('position').execute();
      return rows.map((row) => toTurnRecord(row as Selectable<TurnsTable>));
    },

    async recentTurns(runId: string, opts: RecentTurnsOptions) {
      const op = 'recentTurns';
      opts.signal?.throwIfAborted();
      const id = requireId(op, 'runId', runId);
      const limit = requireInt(op, 'limit', opts.limit, 0, INT4_MAX);
      const outcomes = opts.outcomes?.map((o, i) => requireOneOf(op, `outcomes[${i}]`, o, TURN_OUTCOMES));
      const agents = opts.agents.map((a, i) => requireId(op, `agents[${i}]`, a));
      // One backward scan of (run_id, agent, agent_seq) per agent, all at once (a server runs them in parallel).
      const lists = await Promise.all(
        agents.map(async (agent) => {
          if (limit === 0) return [];
          let query = db.selectFrom('turns').selectAll().where('run_id', '=', id).where('agent', '=', agent);
          if (outcomes) query = query.where('outcome', 'in', outcomes);
          const rows = await query.orderBy('agent_seq', 'desc').limit(limit).execute();
          return rows.reverse().map(toTurnRecord);
        }),
      );
      return Object.fromEntries(agents.map((a, i) => [a, lists[i]!]));
    },
  };
}
