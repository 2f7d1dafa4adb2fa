import { type Kysely, sql } from 'kysely';
import { TAKE_RATE_FUNCTION_0005 } from './0005-rate-windows.ts';

/**
 * Expired rows of `coordination_rates` and `coordination_probes` are removed (the `postgres` coordination backend):
 * before, a quota's slots were deleted only by that quota's next take and a probe claim only by its holder, so
 * the rows of endpoints, windows or pools no longer used stayed forever and the tables grew with history.
 *
 * - `coordination_rates.expires_at`: when the slot's units stop counting (its end plus one window and one more
 *   slot, the rule of `coordination_take_rate`), indexed.
 * - `coordination_take_rate` is as in 0005, and each take that opens a new slot of its quota (at most once per
 *   slot, a sixtieth of the window) also deletes up to 32 rows of any quota that expired more than a minute ago
 *   (the minute keeps the sweep clear of a row its own quota's taker may still be counting).
 * - `coordination_probes` gets an index on `expires_at`: each claim deletes up to 16 claims expired more than a
 *   minute ago (see `CLAIM_PROBE_SQL` in src/coordination/postgres-coordination-sql.ts).
 */
export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`alter table coordination_rates add column expires_at timestamptz`.execute(db);
  // A row written before: its window is the number after the last '@' of its key (`rateKey()`); none, expired.
  await sql`
update coordination_rates set expires_at = coalesce(
  to_timestamp((slot + 62) * (substring(rate_key from '@([0-9.]+)$')::float8) / 60 / 1000), now())`.execute(
    db,
  );
  await sql`alter table coordination_rates alter column expires_at set not null`.execute(db);
  await sql`create index coordination_rates_expires on coordination_rates (expires_at)`.execute(db);
  await sql`create index coordination_probes_expires on coordination_probes (expires_at)`.execute(db);
  await sql.raw(TAKE_RATE_FUNCTION).execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql.raw(TAKE_RATE_FUNCTION_0005.replace('create function', 'create or replace function')).execute(db);
  await sql`drop index coordination_probes_expires`.execute(db);
  await sql`drop index coordination_rates_expires`.execute(db);
  await sql`alter table coordination_rates drop column expires_at`.execute(db);
}

const TAKE_RATE_FUNCTION = `
create or replace function coordination_take_rate(p_pool text, p_key text, p_window float8, p_rpm float8,
  p_tpm float8, p_tokens float8)
returns table (ok boolean, slot bigint, requests float8, tokens float8, retry_ms float8)
language plpgsql as $fn$
#variable_conflict use_column
declare
  now_ms float8;
  cutoff timestamptz;
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
    update coordination_rates r set requests = r.requests + cost_r, tokens = r.tokens + cost_t
      where r.pool = p_pool and r.rate_key = p_key and r.slot = cur;
    if not found then
      -- Only this quota's takers insert its rows, one at a time (the lock): no conflict.
      insert into coordination_rates (pool, rate_key, slot, requests, tokens, expires_at)
        values (p_pool, p_key, cur, cost_r, cost_t, to_timestamp((cur + 62) * p_window / 60 / 1000));
      -- A new slot: a bounded sweep of expired rows of any quota (those of quotas no longer taken stay otherwise).
      -- Rows another transaction holds are skipped: the sweep never waits, so it cannot deadlock with a taker.
      -- The cutoff is a variable (a parameter to the planner: clock_timestamp() itself is volatile, so the index
      -- on expires_at could not be used); oldest first, so the longest-dead rows go before the recently expired.
      cutoff := clock_timestamp() - interval '1 minute';
      delete from coordination_rates r where r.ctid = any(array(
        select x.ctid from coordination_rates x where x.expires_at < cutoff
        order by x.expires_at limit 32 for update skip locked));
    end if;
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
