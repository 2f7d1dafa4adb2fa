import { type Kysely, sql } from 'kysely';

/**
 * The event log holds exactly what was committed (issue 42): a round's events are written by the statement that
 * commits the round, so an interrupted round leaves none and a committed one never lacks its own.
 *
 * - `round_parts.events`: a worker's events for the agent's part it stages, staged with it (the same statement);
 *   the round's commit moves every part's events into `events`.
 * - `live_events`: what the workers of a run hear as it happens, for the live view of `run --workers` only. It may
 *   hold events of turns that are asked again later; nothing that reports on a run reads it.
 *
 * Turn and call keys did not change shape in the store (they are text); a run stores the format its keys were
 * made with in `runs.config.keyFormat` (absent: the format of runs stored before it), so it resumes with them.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table round_parts add column events jsonb`.execute(db);
  await db.schema
    .createTable('live_events')
    .addColumn('id', 'bigserial', (col) => col.primaryKey())
    .addColumn('run_id', 'text', (col) => col.notNull())
    .addColumn('seq', 'integer', (col) => col.notNull())
    .addColumn('at', 'bigint', (col) => col.notNull())
    .addColumn('type', 'text', (col) => col.notNull())
    .addColumn('agent', 'text')
    .addColumn('endpoint', 'text')
    .addColumn('data', 'jsonb', (col) => col.notNull().defaultTo(sql`'{}'::jsonb`))
    .execute();
  await db.schema
    .createIndex('live_events_run_seq_idx')
    .on('live_events')
    .columns(['run_id', 'seq'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('live_events').ifExists().execute();
  await sql`alter table round_parts drop column if exists events`.execute(db);
}
