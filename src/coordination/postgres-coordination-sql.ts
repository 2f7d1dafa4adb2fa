import { TOKEN_BATCH_SQL } from './postgres-token-batch.ts';

/*
 * The statements of the `postgres` coordination backend (postgres-coordination.ts), over the tables of migrations
 * 0003, 0005 and 0006; each is prepared by name on the connections that run it (PREPARED).
 */

/** NOTIFY channel of token wake-ups (payload: the pool) and of health changes (payload: JSON). */
export const TOKENS_CHANNEL = 'breakwater_tokens';
export const HEALTH_CHANNEL = 'breakwater_health';

/*
 * A NOTIFY per release serializes every commit on the server's notification queue: releases notify only while
 * some process waits. A waiter refused with every token held marks the pool's row -1 ("someone waits until",
 * a second past the earliest lease's expiry, when it looks again anyway); `fresh` says
 * the mark was off before, in which case a release racing with the mark may not have seen it, and the waiter
 * looks once more shortly after (once per mark, not a polling loop).
 */
export const WAIT_SQL = `
with f as (
  select count(*) filter (where holder is null or expires_at < now()) as free,
    min(expires_at) filter (where holder is not null and expires_at >= now()) as first
  from coordination_tokens where pool = $1 and slot >= 0 and slot < $2
),
o as (select expires_at as old from coordination_tokens where pool = $1 and slot = -1 for update),
m as (
  update coordination_tokens t
  set expires_at = greatest(coalesce(o.old, now()),
    coalesce((select first from f), now() + make_interval(secs => $3::float8 / 1000)) + interval '1 second')
  from o where t.pool = $1 and t.slot = -1 and (select free from f) = 0
  returning coalesce(o.old < now(), true) as fresh
)
select (select free from f)::int as free, (select fresh from m) as fresh,
  greatest(0, extract(epoch from ((select first from f) - now())) * 1000)::float8 as ms`;

export const RELEASE_SQL = `
with r as (
  update coordination_tokens set holder = null, expires_at = null
  where pool = $1 and slot = $2 and generation = $3 and holder = $4
  returning 1
)
select pg_notify('${TOKENS_CHANNEL}', $1) from r
where exists (select 1 from coordination_tokens w where w.pool = $1 and w.slot = -1 and w.expires_at > now())`;

export const RENEW_SQL = `
update coordination_tokens t
set expires_at = now() + make_interval(secs => $3::float8 / 1000)
from unnest($4::int[], $5::bigint[]) as l(slot, generation)
where t.pool = $1 and t.holder = $2 and t.slot = l.slot and t.generation = l.generation and t.expires_at > now()
returning t.slot, t.generation`;

export const PUBLISH_SQL = `
with u as (
  insert into coordination_health (pool, endpoint_id, facts) values ($1, $2, $3::jsonb)
  on conflict (pool, endpoint_id) do update set facts = excluded.facts, updated_at = now()
  returning 1
)
select pg_notify('${HEALTH_CHANNEL}', $4) from u`;

/** See migration 0005: one round trip, one taker per quota at a time. */
export const TAKE_RATE_SQL =
  'select ok, slot, requests, tokens, retry_ms from coordination_take_rate($1, $2, $3, $4, $5, $6)';

/* A refund only lowers a slot's count: it may run beside a take (which then counted high: never over the limit). */
export const REFUND_RATE_SQL = `
update coordination_rates set requests = greatest(0, requests - $4), tokens = greatest(0, tokens - $5)
where pool = $1 and rate_key = $2 and slot = $3`;

/** A free or expired claim, or this process's own, is (re)taken; another live holder's is left alone. */
export const CLAIM_PROBE_SQL = `
insert into coordination_probes as p (pool, endpoint_id, holder, expires_at)
values ($1, $2, $3, now() + make_interval(secs => $4::float8 / 1000))
on conflict (pool, endpoint_id) do update set holder = excluded.holder, expires_at = excluded.expires_at
where p.holder = excluded.holder or p.expires_at < now()
returning 1`;

/**
 * After each claim, its own statement: up to 16 claims that expired more than a minute ago are deleted (a holder
 * that died, or an endpoint no longer used, would leave its row forever; the minute keeps clear of a holder just
 * ending its probe). Apart from the claim, and taking only rows nobody holds (SKIP LOCKED), it never waits for a
 * lock, so two claimers cannot deadlock on each other's swept rows.
 */
export const SWEEP_PROBES_SQL = `
delete from coordination_probes where ctid = any(array(
  select ctid from coordination_probes where expires_at < now() - interval '1 minute'
  order by expires_at limit 16 for update skip locked))`;

/** The claim given back wakes the pool's waiters (a probe parked behind it looks again). */
export const END_PROBE_SQL = `
with d as (delete from coordination_probes where pool = $1 and endpoint_id = $2 and holder = $3 returning 1)
select pg_notify('${TOKENS_CHANNEL}', $1) from d`;

export const PREPARED = new Map<string, string>([
  [CLAIM_PROBE_SQL, 'bw_coord_claim_probe'],
  [SWEEP_PROBES_SQL, 'bw_coord_sweep_probes'],
  [END_PROBE_SQL, 'bw_coord_end_probe'],
  [TAKE_RATE_SQL, 'bw_coord_take_rate'],
  [TOKEN_BATCH_SQL, 'bw_coord_token_batch'],
  [WAIT_SQL, 'bw_coord_wait'],
  [RELEASE_SQL, 'bw_coord_release'],
  [RENEW_SQL, 'bw_coord_renew'],
]);

/** The window length is part of the name: processes on another clock scale never read each other's slots. */
export function rateKey(key: string, windowMs: number): string {
  return `${key}@${windowMs}`;
}
