import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import type { Fault } from '../../src/core/fault.ts';
import type { AgentStateInput, TurnInput } from '../../src/store/store-types.ts';
import { type BreakwaterDatabase, IN_MEMORY, openDatabase } from '../../src/store/open-database.ts';
import { postgresUrl } from '../support/per-file-database.ts';

export { perFileDatabase, postgresUrl } from '../support/per-file-database.ts';

export interface Backend {
  readonly name: 'pglite' | 'postgres';
  open(): Promise<BreakwaterDatabase>;
}

/**
 * The same suite runs on both: in-memory PGlite and the PostgreSQL server, on the test file's own database (the file
 * calls `perFileDatabase()` at its top).
 */
export const BACKENDS: readonly Backend[] = [
  { name: 'pglite', open: () => openDatabase({ dataDir: IN_MEMORY }) },
  { name: 'postgres', open: () => openDatabase({ url: postgresUrl() }) },
];

/** A run id no other test (or concurrently running file) uses. */
export function uniqueId(prefix: string): string {
  return `${prefix}-${randomUUID()}`;
}

export const MACHINE_VERSION = 'agent-machine@1';

/** Deletes every row a test wrote for these runs (PGlite instances and the file's database live on, per file). */
export async function deleteRuns(database: BreakwaterDatabase, runIds: readonly string[]): Promise<void> {
  if (runIds.length === 0) return;
  const { db } = database;
  await db.deleteFrom('events').where('run_id', 'in', runIds).execute();
  await db.deleteFrom('call_results').where('run_id', 'in', runIds).execute();
  await db.deleteFrom('runs').where('run_id', 'in', runIds).execute();
}

/** An agent's state row as the runtime commits it (utterances are the turns log, not here). */
export function state(agent: string, round: number, extra: Partial<AgentStateInput> = {}): AgentStateInput {
  return {
    agent,
    snapshot: { status: 'active', value: 'idle', context: { turn: null, agent, round }, children: {} },
    slots: { lastRound: String(round), notes: `note ${round}` },
    toolResults: [{ tool: 'lookup', round, output: { ok: true } }],
    ...extra,
  };
}

export const FAULT: Fault = {
  kind: 'rate_limited',
  provider: 'anthropic',
  status: 429,
  retryAfterMs: 2_000,
  message: 'rate limited',
  endpointId: 'primary-anthropic',
};

export function turn(
  itemId: string,
  agent: string,
  round: number,
  extra: Partial<TurnInput> = {},
): TurnInput {
  return {
    itemId,
    agent,
    prompt: {
      system: `You are ${agent}.`,
      messages: [{ role: 'user', content: `${itemId} round ${round}` }],
    },
    answer: { text: `${agent} on ${itemId} in round ${round}` },
    outcome: 'answered',
    endpointId: 'primary-anthropic',
    usage: { inputTokens: 10, outputTokens: 5, source: 'reported' },
    faults: [FAULT],
    waitMs: 1_250,
    idempotencyKey: `${itemId}:${agent}:${round}`,
    ...extra,
  };
}

/** Row counts and the run's current round straight from SQL, to prove a failed call changed nothing. */
export async function footprint(database: BreakwaterDatabase, runId: string) {
  const { db } = database;
  const count = async (table: 'rounds' | 'turns' | 'agent_states') =>
    Number(
      (
        await db
          .selectFrom(table)
          .select(sql<string | number>`count(*)`.as('n'))
          .where('run_id', '=', runId)
          .executeTakeFirstOrThrow()
      ).n,
    );
  const run = await db
    .selectFrom('runs')
    .select('current_round')
    .where('run_id', '=', runId)
    .executeTakeFirst();
  return {
    rounds: await count('rounds'),
    turns: await count('turns'),
    states: await count('agent_states'),
    currentRound: run?.current_round,
  };
}
