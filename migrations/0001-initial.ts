import { type Kysely, sql } from 'kysely';

/**
 * The durable store's first schema: runs, committed rounds with their turns and agent snapshots,
 * the call memo and the event log. Every document column is JSONB. The same SQL runs on PGlite and
 * on a PostgreSQL server.
 *
 * Exactly-once rounds rest on two things declared here: the `rounds` primary key (a round row can
 * exist once) and `runs.current_round`, which `commitRound` compare-and-sets in the same transaction.
 * Turns and snapshots reference their round row, so they cannot outlive or precede its commit.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('runs')
    .addColumn('run_id', 'text', (col) => col.primaryKey())
    .addColumn('scenario', 'text', (col) => col.notNull())
    .addColumn('config', 'jsonb', (col) => col.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('status', 'text', (col) => col.notNull().defaultTo('running'))
    .addColumn('current_round', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('total_rounds', 'integer', (col) => col.notNull())
    .addColumn('machine_version', 'text', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull())
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull())
    .addColumn('finished_at', 'timestamptz')
    .addCheckConstraint('runs_status_check', sql`status in ('running', 'completed', 'failed', 'interrupted')`)
    .addCheckConstraint('runs_rounds_check', sql`current_round >= 0 and total_rounds >= 0`)
    .execute();
  await db.schema.createIndex('runs_created_at_idx').on('runs').column('created_at').execute();

  await db.schema
    .createTable('rounds')
    .addColumn('run_id', 'text', (col) => col.notNull().references('runs.run_id').onDelete('cascade'))
    .addColumn('round', 'integer', (col) => col.notNull())
    .addColumn('committed_at', 'timestamptz', (col) => col.notNull())
    .addColumn('summary', 'jsonb')
    .addPrimaryKeyConstraint('rounds_pkey', ['run_id', 'round'])
    .addCheckConstraint('rounds_round_check', sql`round >= 1`)
    .execute();

  await db.schema
    .createTable('turns')
    .addColumn('run_id', 'text', (col) => col.notNull())
    .addColumn('round', 'integer', (col) => col.notNull())
    .addColumn('item_id', 'text', (col) => col.notNull())
    .addColumn('agent', 'text', (col) => col.notNull())
    .addColumn('position', 'integer', (col) => col.notNull())
    .addColumn('prompt', 'jsonb', (col) => col.notNull())
    .addColumn('answer', 'jsonb')
    .addColumn('outcome', 'text', (col) => col.notNull())
    .addColumn('endpoint_id', 'text')
    .addColumn('degraded', 'boolean', (col) => col.notNull().defaultTo(false))
    .addColumn('usage', 'jsonb')
    .addColumn('faults', 'jsonb', (col) => col.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('wait_ms', 'integer', (col) => col.notNull().defaultTo(0))
    .addColumn('idempotency_key', 'text')
    .addPrimaryKeyConstraint('turns_pkey', ['run_id', 'round', 'item_id', 'agent'])
    .addForeignKeyConstraint('turns_round_fkey', ['run_id', 'round'], 'rounds', ['run_id', 'round'], (fk) =>
      fk.onDelete('cascade'),
    )
    .addCheckConstraint(
      'turns_outcome_check',
      sql`outcome in ('answered', 'fallback', 'degraded', 'failed', 'no_agent')`,
    )
    .addCheckConstraint('turns_faults_check', sql`jsonb_typeof(faults) = 'array'`)
    .addCheckConstraint('turns_wait_ms_check', sql`wait_ms >= 0`)
    .execute();

  await db.schema
    .createTable('agent_snapshots')
    .addColumn('run_id', 'text', (col) => col.notNull())
    .addColumn('agent', 'text', (col) => col.notNull())
    .addColumn('round', 'integer', (col) => col.notNull())
    .addColumn('data', 'jsonb', (col) => col.notNull())
    .addColumn('machine_version', 'text', (col) => col.notNull())
    .addPrimaryKeyConstraint('agent_snapshots_pkey', ['run_id', 'agent', 'round'])
    .addForeignKeyConstraint(
      'agent_snapshots_round_fkey',
      ['run_id', 'round'],
      'rounds',
      ['run_id', 'round'],
      (fk) => fk.onDelete('cascade'),
    )
    .execute();

  // No foreign key to runs: the memo is written mid-round, on the hot path, and must never fail
  // because of something other than the key itself.
  await db.schema
    .createTable('call_results')
    .addColumn('idempotency_key', 'text', (col) => col.primaryKey())
    .addColumn('run_id', 'text', (col) => col.notNull())
    .addColumn('result', 'jsonb', (col) => col.notNull())
    .addColumn('created_at', 'timestamptz', (col) => col.notNull())
    .execute();
  await db.schema.createIndex('call_results_run_id_idx').on('call_results').column('run_id').execute();

  await db.schema
    .createTable('events')
    .addColumn('id', 'bigserial', (col) => col.primaryKey())
    .addColumn('run_id', 'text', (col) => col.notNull())
    .addColumn('seq', 'integer', (col) => col.notNull())
    .addColumn('at', 'bigint', (col) => col.notNull())
    .addColumn('type', 'text', (col) => col.notNull())
    .addColumn('agent', 'text')
    .addColumn('endpoint', 'text')
    .addColumn('data', 'jsonb', (col) => col.notNull().defaultTo(sql`'{}'::jsonb`))
    .execute();
  await db.schema.createIndex('events_run_seq_idx').on('events').columns(['run_id', 'seq']).execute();
}

/** Drops everything `up` created, children first. */
export async function down(db: Kysely<unknown>): Promise<void> {
  for (const table of ['events', 'call_results', 'agent_snapshots', 'turns', 'rounds', 'runs']) {
    await db.schema.dropTable(table).ifExists().execute();
  }
}
