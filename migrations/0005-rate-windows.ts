import { type Kysely, sql } from 'kysely';

/**
 * Shared RPM/TPM windows of a coordination pool (the `postgres` coordination backend).
 *
 * - `coordination_rates`: the units (requests, tokens) every process of a pool took from one endpoint's quota, in
 *   slots of 1/60 of the window. At most 62 rows per quota: a slot is deleted once it left the window.
 * - `coordination_take_rate(pool, key, window_ms, rpm, tpm, tokens)`: takes one call's units if each limited
 *   window has room, else says in how many ms it would. One round trip; one taker per quota at a time (a
 *   transaction advisory lock on the quota), so the count and the add cannot interleave with another process's.
 *   A unit counts from its slot's start until its slot's end plus one window and one more slot (the call reaches
 *   the provider a little after the permit: the extra slot keeps that delay from letting one call too many in).
 * - `coordination_probes`: which process holds the pool's one HALF-OPEN probe of an endpoint, until when (a
 *   recovering endpoint is probed once by the pool, not once per process).
 */
/** The function as this migration creates it (0006 replaces it; its `down` puts this one back). */
export const TAKE_RATE_FUNCTION_0005 = `
create function coordination_take_rate(p_pool text, p_key text, p_window float8, p_rpm float8, p_tpm float8,
  p_tokens float8)
returns table (ok boolean, slot bigint, requests float8, tokens float8, retry_ms float8)
language plpgsql as $fn$
#variable_conflict use_column
declare
  now_ms float8;
  cur bigint;
  cost_r float8 := case when p_rpm is null then 0 else least(1, p_rpm) end;
  cost_t float8 := case when p_tpm is null then 0 else least(greatest(p_tokens, 0), p_tpm) end;
  used_r float8;
  used_t float8;
  need_r float8;
  need_t float8;
  freed_r float8 := 0;
  freed_t float8 := 0;
  rec record;
begin
  perform pg_advisory_xact_lock(hashtextextended(p_pool || chr(31) || p_key, 0));
  -- The clock is read once the lock is held: a taker that waited is counted when it was granted.
  now_ms := extract(epoch from clock_timestamp()) * 1000;
  cur := floor(now_ms * 60 / p_window);
  delete from coordination_rates r where r.pool = p_pool and r.rate_key = p_key and r.slot < cur - 61;
  select coalesce(sum(r.requests), 0), coalesce(sum(r.tokens), 0) into used_r, used_t
    from coordination_rates r where r.pool = p_pool and r.rate_key = p_key;
  need_r := case when p_rpm is null then 0 else used_r + cost_r - p_rpm end;
  need_t := case when p_tpm is null then 0 else used_t + cost_t - p_tpm end;
  if need_r <= 1e-9 and need_t <= 1e-9 then
    insert into coordination_rates as r (pool, rate_key, slot, requests, tokens)
      values (p_pool, p_key, cur, cost_r, cost_t)
      on conflict (pool, rate_key, slot)
      do update set requests = r.requests + excluded.requests, tokens = r.tokens + excluded.tokens;
    return query select true, cur, cost_r, cost_t, 0::float8;
    return;
  end if;
  -- Oldest slots first: the first one whose leaving frees enough says when to look again.
  for rec in select r.slot, r.requests, r.tokens from coordination_rates r
      where r.pool = p_pool and r.rate_key = p_key order by r.slot loop
    freed_r := freed_r + rec.requests;
    freed_t := freed_t + rec.tokens;
    if freed_r >= need_r - 1e-9 and freed_t >= need_t - 1e-9 then
      return query select false, null::bigint, 0::float8, 0::float8,
        greatest(1, (rec.slot + 62) * p_window / 60 - now_ms);
      return;
    end if;
  end loop;
  return query select false, null::bigint, 0::float8, 0::float8, p_window;
end
$fn$`;

export async function up(db: Kysely<unknown>): Promise<void> {
  await db.schema
    .createTable('coordination_rates')
    .addColumn('pool', 'text', (col) => col.notNull())
    .addColumn('rate_key', 'text', (col) => col.notNull())
    .addColumn('slot', 'bigint', (col) => col.notNull())
    .addColumn('requests', 'float8', (col) => col.notNull().defaultTo(0))
    .addColumn('tokens', 'float8', (col) => col.notNull().defaultTo(0))
    .addPrimaryKeyConstraint('coordination_rates_pk', ['pool', 'rate_key', 'slot'])
    .execute();
  await db.schema
    .createTable('coordination_probes')
    .addColumn('pool', 'text', (col) => col.notNull())
    .addColumn('endpoint_id', 'text', (col) => col.notNull())
    .addColumn('holder', 'text', (col) => col.notNull())
    .addColumn('expires_at', 'timestamptz', (col) => col.notNull())
    .addPrimaryKeyConstraint('coordination_probes_pk', ['pool', 'endpoint_id'])
    .execute();
  await sql.raw(TAKE_RATE_FUNCTION_0005).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`drop function coordination_take_rate(text, text, float8, float8, float8, float8)`.execute(db);
  await db.schema.dropTable('coordination_rates').execute();
  await db.schema.dropTable('coordination_probes').execute();
}
