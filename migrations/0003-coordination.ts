import { type Kysely, sql } from 'kysely';

/**
 * Coordination of several processes on one quota (the `postgres` coordination backend).
 *
 * - `coordination_tokens`: one row per global concurrency token of a pool (`slot` 0 … limit-1). A held token has
 *   a `holder` (the process) and an `expires_at` that the holder's heartbeat pushes forward; `generation` grows
 *   with every grant of the slot, so a release or a renewal carrying an older generation is refused (fencing).
 *   A pool can never have more tokens held than rows below its limit: acquisition takes one free row with
 *   `FOR UPDATE SKIP LOCKED`. Slot -1 of a pool is its "someone waits until" mark: releases NOTIFY only while
 *   it is set (a NOTIFY per release would serialize every commit on the notification queue).
 * - `coordination_health`: the last shared health facts of each endpoint of a pool (cooldown, disable, breaker
 *   open), read by a process when it joins; changes travel by NOTIFY.
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('coordination_tokens')
    .addColumn('pool', 'text', (col) => col.notNull())
    .addColumn('slot', 'integer', (col) => col.notNull())
    .addColumn('holder', 'text')
    .addColumn('generation', 'bigint', (col) => col.notNull().defaultTo(0))
    .addColumn('expires_at', 'timestamptz')
    .addPrimaryKeyConstraint('coordination_tokens_pk', ['pool', 'slot'])
    .execute();
  // Every grant rewrites its row: room on the page keeps those updates HOT (no index write, quick pruning).
  await sql`alter table coordination_tokens set (fillfactor = 30)`.execute(db);
  await db.schema
    .createTable('coordination_health')
    .addColumn('pool', 'text', (col) => col.notNull())
    .addColumn('endpoint_id', 'text', (col) => col.notNull())
    .addColumn('facts', 'jsonb', (col) => col.notNull())
    .addColumn('updated_at', 'timestamptz', (col) => col.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint('coordination_health_pk', ['pool', 'endpoint_id'])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await db.schema.dropTable('coordination_health').execute();
  await db.schema.dropTable('coordination_tokens').execute();
}
