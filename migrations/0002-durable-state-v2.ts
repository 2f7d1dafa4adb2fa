import { type Kysely, sql } from 'kysely';

/**
 * Durable state v2: a commit costs the same at round 1 and round 1,000.
 *
 * - `turns` is the append-only log it already was, with `agent_seq`: the order in which one agent finished its
 *   turns (1, 2, 3, … per run and agent) and a unique index on it, so an agent's last N turns (the window its
 *   prompt reads, the answer cache) are one short index scan.
 * - `agent_states`: ONE row per (run, agent), upserted when it changes: the machine version, the XState persisted
 *   snapshot without the copies of what other rows hold (utterances are the turns log, settings come from the
 *   agent's definition), the memory slots, the tool results the prompt repeats, and the last round it changed in.
 * - `rounds.health`: every endpoint's health (breaker, cooldown, disable and its reason, bucket levels, AIMD)
 *   as it was when the round committed.
 * - `runs.failure`: why a run failed; `runs.lease_holder` / `runs.lease_expires_at`: the one process driving it.
 *
 * Existing stores keep their data: turns get their agent order from (round, position), and each agent's latest
 * `agent_snapshots` row becomes its state row (its utterances are in the turns already). `agent_snapshots` is
 * no longer written; it stays so nothing committed is lost.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('turns').addColumn('agent_seq', 'integer').execute();
  await sql`
    update turns t set agent_seq = s.n
    from (
      select run_id, round, item_id, agent,
             row_number() over (partition by run_id, agent order by round, position) as n
      from turns
    ) s
    where t.run_id = s.run_id and t.round = s.round and t.item_id = s.item_id and t.agent = s.agent
  `.execute(db);
  await db.schema
    .alterTable('turns')
    .alterColumn('agent_seq', (col) => col.setNotNull())
    .execute();
  await db.schema
    .createIndex('turns_agent_seq_idx')
    .on('turns')
    .columns(['run_id', 'agent', 'agent_seq'])
    .unique()
    .execute();

  await db.schema
    .createTable('agent_states')
    .addColumn('run_id', 'text', (col) => col.notNull().references('runs.run_id').onDelete('cascade'))
    .addColumn('agent', 'text', (col) => col.notNull())
    .addColumn('machine_version', 'text', (col) => col.notNull())
    .addColumn('snapshot', 'jsonb', (col) => col.notNull())
    .addColumn('slots', 'jsonb', (col) => col.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn('tool_results', 'jsonb', (col) => col.notNull().defaultTo(sql`'[]'::jsonb`))
    .addColumn('last_round', 'integer', (col) => col.notNull())
    .addPrimaryKeyConstraint('agent_states_pkey', ['run_id', 'agent'])
    .execute();
  await sql`
    insert into agent_states (run_id, agent, machine_version, snapshot, slots, tool_results, last_round)
    select distinct on (run_id, agent)
           run_id, agent, machine_version,
           coalesce(data->'actorSnapshot', '{}'::jsonb),
           case when jsonb_typeof(data->'memory') = 'object' then data->'memory' else '{}'::jsonb end,
           case when jsonb_typeof(data->'toolResults') = 'array' then data->'toolResults' else '[]'::jsonb end,
           round
    from agent_snapshots
    order by run_id, agent, round desc
  `.execute(db);

  await db.schema.alterTable('rounds').addColumn('health', 'jsonb').execute();
  await db.schema.alterTable('runs').addColumn('failure', 'text').execute();
  await db.schema.alterTable('runs').addColumn('lease_holder', 'text').execute();
  await db.schema.alterTable('runs').addColumn('lease_expires_at', 'timestamptz').execute();
}

/** Back to the 0001 schema (the state rows and health are dropped; turns and legacy snapshots stay). */
export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.alterTable('runs').dropColumn('lease_expires_at').execute();
  await db.schema.alterTable('runs').dropColumn('lease_holder').execute();
  await db.schema.alterTable('runs').dropColumn('failure').execute();
  await db.schema.alterTable('rounds').dropColumn('health').execute();
  await db.schema.dropTable('agent_states').ifExists().execute();
  await db.schema.dropIndex('turns_agent_seq_idx').ifExists().execute();
  await db.schema.alterTable('turns').dropColumn('agent_seq').execute();
}
