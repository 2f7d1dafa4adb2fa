import type { Kysely } from 'kysely';

/**
 * Runs spread over worker processes (`breakwater worker`).
 *
 * `round_parts`: one row per (run, round, agent) that has turns in the round — the agent's "part". A worker
 * claims a part by inserting its row (or, once the holder's lease ran out, by taking it over with a
 * compare-and-set that bumps `generation`), asks the agent's turns, then stages them here (`done`, `turns`,
 * `state`) with a compare-and-set on (holder, generation): a worker whose lease was taken over is refused.
 * The round itself is committed by `commitRoundStatement` (one statement, compare-and-set on
 * `runs.current_round`) once every part is staged, so it is committed exactly once whoever gets there first.
 * Rows stay after the commit: they say which worker did which agent's turns (the report's by-worker counts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('round_parts')
    .addColumn('run_id', 'text', (col) => col.notNull().references('runs.run_id').onDelete('cascade'))
    .addColumn('round', 'integer', (col) => col.notNull())
    .addColumn('agent', 'text', (col) => col.notNull())
    .addColumn('holder', 'text', (col) => col.notNull())
    .addColumn('generation', 'integer', (col) => col.notNull().defaultTo(1))
    .addColumn('expires_at', 'timestamptz', (col) => col.notNull())
    .addColumn('done', 'boolean', (col) => col.notNull().defaultTo(false))
    .addColumn('turns', 'jsonb')
    .addColumn('state', 'jsonb')
    .addPrimaryKeyConstraint('round_parts_pk', ['run_id', 'round', 'agent'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('round_parts').execute();
}
