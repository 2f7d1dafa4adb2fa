import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { redactUrl, scrubSecrets } from '../redact/secret-scrubber.ts';
import { isConnectionFailure } from '../store/guarded-pg-pool.ts';
import { migrateToLatest } from '../store/migrate-to-latest.ts';
import type {
  CoordinationBackend,
  GlobalAcquireResult,
  GlobalLease,
  RateAsk,
  RatePermit,
  RateTakeResult,
  SharedHealthFacts,
  SharedHealthMessage,
} from './coordination-backend.ts';
import { leaseKey } from './coordination-backend.ts';
import { CoordinationUnavailableError } from './coordination-errors.ts';
import {
  DEFAULT_CONNECT_RIDE_OUT,
  isConnectCut,
  type RideOut,
  rideOutCuts,
  statementRideOut,
} from './connect-ride-out.ts';
import { PinnedPgClients } from './pinned-pg-clients.ts';
import {
  PostgresTokenBatcher,
  TOKEN_BATCH_SQL,
  type TokenBatch,
  type TokenBatchResult,
} from './postgres-token-batch.ts';

/** NOTIFY channel of token wake-ups (payload: the pool) and of health changes (payload: JSON). */
const TOKENS_CHANNEL = 'breakwater_tokens';
const HEALTH_CHANNEL = 'breakwater_health';

/** Options of {@link PostgresCoordination}. */
export interface PostgresCoordinationOptions {
  readonly url: string;
  readonly pool: string;
  readonly processId: string;
  readonly leaseTtlMs: number;
  /** Connections for acquisitions and releases. Default 4. */
  readonly connections?: number;
  /**
   * Token statements in flight at once; each carries every acquire and release this process asked for while the
   * others were out (see postgres-token-batch.ts). Default 2.
   */
  readonly tokenStatementsInFlight?: number;
  /** Connecting and each query must answer within this, ms. Default 5 000. */
  readonly timeoutMs?: number;
  /** How `connect()` rides out a connection cut while it connects. Default {@link DEFAULT_CONNECT_RIDE_OUT}. */
  readonly connectRideOut?: RideOut;
}

/*
 * Why row leases with SKIP LOCKED and not advisory locks (bench/coordination.ts measures both): an advisory
 * lock lives as long as its session, so each held token pins a connection, a dead process's token comes back
 * only when the server notices the socket is gone (TCP keepalive, minutes), and a partitioned process cannot
 * tell it lost the lock. A row lease carries an expiry (the TTL bounds how long a dead process keeps it) and a
 * generation (a stale holder's release or renewal is refused), and one connection serves every token.
 */

/*
 * A NOTIFY per release serializes every commit on the server's notification queue: releases notify only while
 * some process waits. A waiter refused with every token held marks the pool's row -1 ("someone waits until",
 * a second past the earliest lease's expiry, when it looks again anyway); `fresh` says
 * the mark was off before, in which case a release racing with the mark may not have seen it, and the waiter
 * looks once more shortly after (once per mark, not a polling loop).
 */
const WAIT_SQL = `
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

/** How many given-back slots a process remembers as its first places to look. */
const FREED_KEPT = 64;

/** After a fresh wait mark, the one look again: longer than a release statement takes, ms. */
const FRESH_MARK_RECHECK_MS = 25;

const RELEASE_SQL = `
with r as (
  update coordination_tokens set holder = null, expires_at = null
  where pool = $1 and slot = $2 and generation = $3 and holder = $4
  returning 1
)
select pg_notify('${TOKENS_CHANNEL}', $1) from r
where exists (select 1 from coordination_tokens w where w.pool = $1 and w.slot = -1 and w.expires_at > now())`;

const RENEW_SQL = `
update coordination_tokens t
set expires_at = now() + make_interval(secs => $3::float8 / 1000)
from unnest($4::int[], $5::bigint[]) as l(slot, generation)
where t.pool = $1 and t.holder = $2 and t.slot = l.slot and t.generation = l.generation and t.expires_at > now()
returning t.slot, t.generation`;

const PUBLISH_SQL = `
with u as (
  insert into coordination_health (pool, endpoint_id, facts) values ($1, $2, $3::jsonb)
  on conflict (pool, endpoint_id) do update set facts = excluded.facts, updated_at = now()
  returning 1
)
select pg_notify('${HEALTH_CHANNEL}', $4) from u`;

/** See migration 0005: one round trip, one taker per quota at a time. */
const TAKE_RATE_SQL =
  'select ok, slot, requests, tokens, retry_ms from coordination_take_rate($1, $2, $3, $4, $5, $6)';

/* A refund only lowers a slot's count: it may run beside a take (which then counted high: never over the limit). */
const REFUND_RATE_SQL = `
update coordination_rates set requests = greatest(0, requests - $4), tokens = greatest(0, tokens - $5)
where pool = $1 and rate_key = $2 and slot = $3`;

/** A free or expired claim, or this process's own, is (re)taken; another live holder's is left alone. */
const CLAIM_PROBE_SQL = `
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
const SWEEP_PROBES_SQL = `
delete from coordination_probes where ctid = any(array(
  select ctid from coordination_probes where expires_at < now() - interval '1 minute'
  order by expires_at limit 16 for update skip locked))`;

/** The claim given back wakes the pool's waiters (a probe parked behind it looks again). */
const END_PROBE_SQL = `
with d as (delete from coordination_probes where pool = $1 and endpoint_id = $2 and holder = $3 returning 1)
select pg_notify('${TOKENS_CHANNEL}', $1) from d`;

const PREPARED = new Map<string, string>([
  [CLAIM_PROBE_SQL, 'bw_coord_claim_probe'],
  [SWEEP_PROBES_SQL, 'bw_coord_sweep_probes'],
  [END_PROBE_SQL, 'bw_coord_end_probe'],
  [TAKE_RATE_SQL, 'bw_coord_take_rate'],
  [TOKEN_BATCH_SQL, 'bw_coord_token_batch'],
  [WAIT_SQL, 'bw_coord_wait'],
  [RELEASE_SQL, 'bw_coord_release'],
  [RENEW_SQL, 'bw_coord_renew'],
]);

/**
 * The `postgres` coordination backend: global tokens as lease rows (holder, expiry, generation) in
 * `coordination_tokens`, taken with `FOR UPDATE SKIP LOCKED`, waiters woken by LISTEN/NOTIFY, endpoint health
 * in `coordination_health` and on NOTIFY.
 *
 * @example
 * ```ts
 * const backend = new PostgresCoordination({ url, pool: 'default', processId: 'w1', leaseTtlMs: 10_000 });
 * await backend.connect();
 * const r = await backend.tryAcquire(3);
 * ```
 */
export class PostgresCoordination implements CoordinationBackend {
  readonly location: string;
  readonly #o: PostgresCoordinationOptions;
  readonly #pool: pg.Pool;
  /** The pool's connections as used by the statements here (the pool itself serves the migration). */
  readonly #conns: PinnedPgClients;
  readonly #batch: PostgresTokenBatcher;
  #listener: pg.Client | undefined;
  #listening: Promise<void> | undefined;
  readonly #wake = new Set<() => void>();
  readonly #health = new Set<(m: SharedHealthMessage) => void>();
  readonly #lost = new Set<(e: unknown) => void>();
  #closed = false;
  #spread = Math.floor(Math.random() * 1_000);
  /** Slots this process gave back, newest last (at most `limit`): where its next acquisitions look first. */
  readonly #freed: number[] = [];
  readonly #clients = new Set<pg.Client | pg.PoolClient>();
  /** The pools of connect attempts under way: ended by close() (their connections must not outlive it). */
  readonly #connecting = new Set<pg.Pool>();

  constructor(options: PostgresCoordinationOptions) {
    this.#o = options;
    this.location = `PostgreSQL at ${redactUrl(options.url)}`;
    const timeout = options.timeoutMs ?? 5_000;
    const max = options.connections ?? 4;
    this.#pool = new pg.Pool({
      connectionString: options.url,
      // One more than the pinned statements' connections: connect()'s check and migrations always find one.
      max: max + 1,
      connectionTimeoutMillis: timeout,
      query_timeout: timeout,
      statement_timeout: timeout,
      keepAlive: true,
      // Pinned connections stay open while idle: a peer that silently dropped one (a NAT, a proxy) is found by
      // TCP keepalive within seconds, not the OS default of two hours.
      keepAliveInitialDelayMillis: 10_000,
      application_name: 'breakwater-coordination',
      // A token's grant and release are not worth a disk flush each (the lease rows are short-lived state, and
      // a flush per grant caps PostgreSQL at a few hundred grants/s): a server crash can lose the last few
      // hundred ms of them, and a holder whose grant was lost fails its next renewal and is fenced.
      options: '-c synchronous_commit=off',
    });
    // An idle client whose server goes away emits 'error' on the pool: without a listener it crashes the process.
    this.#pool.on('error', () => {});
    this.#pool.on('connect', (client) => {
      this.#clients.add(client);
      client.on('error', () => {});
    });
    this.#pool.on('remove', (client) => this.#clients.delete(client));
    this.#conns = new PinnedPgClients(this.#pool, max);
    this.#batch = new PostgresTokenBatcher((b) => this.#runBatch(b), options.tokenStatementsInFlight ?? 2);
  }

  /**
   * Checks the server, brings the coordination tables to the latest migration and subscribes to wake-ups. A
   * connection cut meanwhile (terminated by an administrator while the server stays up, a reset) is ridden out:
   * each attempt on connections of its own (a pool made for it and ended after it, a new LISTEN client), a
   * bounded number of attempts with a growing pause, within one window (see connect-ride-out.ts); then one error
   * ({@link CoordinationUnavailableError}) saying how many attempts over how long. Closed meanwhile: stops at once.
   */
  async connect(signal?: AbortSignal): Promise<void> {
    signal?.throwIfAborted();
    const closed = () =>
      this.#closed ? new CoordinationUnavailableError('the coordination backend is closed') : undefined;
    try {
      await rideOutCuts(
        () => this.#connectOnce(signal),
        this.#o.connectRideOut ?? DEFAULT_CONNECT_RIDE_OUT,
        signal,
        closed,
      );
    } catch (e) {
      if (this.#closed) throw closed();
      throw this.#unavailable(e, connectStep(e), e as { attempts?: number; elapsedMs?: number });
    }
  }

  /** One attempt of {@link connect}: none of its connections is one a cut before it could have broken. */
  async #connectOnce(signal: AbortSignal | undefined): Promise<void> {
    const timeout = this.#o.timeoutMs ?? 5_000;
    const pool = new pg.Pool({
      connectionString: this.#o.url,
      // The migrator holds one connection for its lock and its transactions; one more for kysely's own look.
      max: 2,
      connectionTimeoutMillis: timeout,
      query_timeout: timeout,
      statement_timeout: timeout,
      application_name: 'breakwater-coordination',
    });
    pool.on('error', () => {});
    // Its connections are close()'s to cut too: a migration waiting on a lock must not hold a closed backend.
    pool.on('connect', (client) => {
      this.#clients.add(client);
      client.on('error', () => {});
    });
    pool.on('remove', (client) => this.#clients.delete(client));
    this.#connecting.add(pool);
    try {
      try {
        await pool.query('select 1');
      } catch (e) {
        throw withStep(e, 'could not connect');
      }
      try {
        await migrateToLatest(new Kysely<unknown>({ dialect: new PostgresDialect({ pool }) }), {
          ...(signal ? { signal } : {}),
        });
      } catch (e) {
        throw withStep(e, 'could not prepare the coordination tables');
      }
    } finally {
      this.#connecting.delete(pool);
      await boundedClose(
        pool.end().catch(() => {}),
        1_000,
      );
    }
    // Closed while connecting (a runtime stopped at once): no LISTEN connection may be opened after close().
    if (this.#closed) throw new CoordinationUnavailableError('the coordination backend is closed');
    await this.#listen();
  }

  async tryAcquire(limit: number): Promise<GlobalAcquireResult> {
    await this.#ensureSlots(limit);
    const granted = await this.#batch.acquire(limit);
    if (granted) return { ok: true, lease: { slot: String(granted.slot), generation: granted.generation } };
    const e = await this.#query<{ ms: number | null; fresh: boolean | null; free: number }>(WAIT_SQL, [
      this.#o.pool,
      limit,
      this.#o.leaseTtlMs,
    ]);
    const wait = e.rows[0];
    // A free token was only locked by another acquirer or a release in flight: look again at once, no mark.
    if (wait && wait.free > 0) return { ok: false, retryInMs: 0 };
    const ms = wait?.ms;
    const retryInMs = ms === null || ms === undefined ? undefined : Number(ms);
    if (wait?.fresh !== false)
      return { ok: false, retryInMs: Math.min(retryInMs ?? FRESH_MARK_RECHECK_MS, FRESH_MARK_RECHECK_MS) };
    return { ok: false, retryInMs };
  }

  async release(lease: GlobalLease): Promise<void> {
    const slot = Number(lease.slot);
    // Skipped by the batch (its row was locked: a renewal in flight, another process taking an expired lease):
    // given back by a statement that waits for the lock (a no-op if the lease is no longer this process's).
    if (!(await this.#batch.release(slot, lease.generation)))
      await this.#query(RELEASE_SQL, [this.#o.pool, slot, lease.generation, this.#o.processId]);
    this.#freed.push(slot);
    if (this.#freed.length > FREED_KEPT) this.#freed.shift();
  }

  /** One statement for the acquires and releases gathered by {@link PostgresTokenBatcher}. */
  async #runBatch(batch: TokenBatch): Promise<TokenBatchResult> {
    // The search starts at a slot this process gave back (no other process looks there first, so concurrent
    // acquirers rarely meet on one row); without one, each statement starts at another slot.
    const mine = batch.acquire > 0 ? this.#freed.pop() : undefined;
    const limit = Math.max(batch.limit, 1);
    const start = mine !== undefined && mine < limit ? mine : this.#spread++ % limit;
    const r = await this.#query<{ k: 'a' | 'r' | 'n'; slot: number | null; generation: string | null }>(
      TOKEN_BATCH_SQL,
      [
        this.#o.pool,
        batch.limit,
        this.#o.processId,
        batch.release.map((l) => l.slot),
        batch.release.map((l) => l.generation),
        batch.acquire,
        start,
        this.#o.leaseTtlMs,
      ],
    );
    const granted: { slot: number; generation: number }[] = [];
    const released = new Set<number>();
    for (const row of r.rows) {
      if (row.k === 'a') granted.push({ slot: Number(row.slot), generation: Number(row.generation) });
      else if (row.k === 'r') released.add(Number(row.slot));
    }
    return { granted, released };
  }

  async renew(leases: readonly GlobalLease[]): Promise<Set<string>> {
    if (leases.length === 0) return new Set();
    const r = await this.#query<{ slot: number; generation: string }>(RENEW_SQL, [
      this.#o.pool,
      this.#o.processId,
      this.#o.leaseTtlMs,
      leases.map((l) => Number(l.slot)),
      leases.map((l) => l.generation),
    ]);
    return new Set(
      r.rows.map((row) => leaseKey({ slot: String(row.slot), generation: Number(row.generation) })),
    );
  }

  async takeRate(ask: RateAsk): Promise<RateTakeResult> {
    const r = await this.#query<{
      ok: boolean;
      slot: string | null;
      requests: number;
      tokens: number;
      retry_ms: number;
    }>(TAKE_RATE_SQL, [
      this.#o.pool,
      rateKey(ask.key, ask.windowMs),
      ask.windowMs,
      ask.rpm ?? null,
      ask.tpm ?? null,
      ask.tokens,
    ]);
    const row = r.rows[0];
    if (!row) throw new CoordinationUnavailableError('coordination_take_rate returned no row');
    if (!row.ok) return { ok: false, retryInMs: Number(row.retry_ms) };
    return {
      ok: true,
      permit: {
        key: ask.key,
        windowMs: ask.windowMs,
        slot: Number(row.slot),
        requests: Number(row.requests),
        tokens: Number(row.tokens),
      },
    };
  }

  async refundRate(permit: RatePermit): Promise<void> {
    await this.#query(REFUND_RATE_SQL, [
      this.#o.pool,
      rateKey(permit.key, permit.windowMs),
      permit.slot,
      permit.requests,
      permit.tokens,
    ]);
  }

  async claimProbe(endpointId: string, ttlMs: number): Promise<boolean> {
    const r = await this.#query(CLAIM_PROBE_SQL, [this.#o.pool, endpointId, this.#o.processId, ttlMs]);
    await this.#query(SWEEP_PROBES_SQL, []);
    return r.rows.length > 0;
  }

  async endProbe(endpointId: string): Promise<void> {
    await this.#query(END_PROBE_SQL, [this.#o.pool, endpointId, this.#o.processId]);
  }

  async publishHealth(endpointId: string, facts: SharedHealthFacts): Promise<void> {
    const message: SharedHealthMessage & { pool: string } = {
      pool: this.#o.pool,
      endpointId,
      facts,
      from: this.#o.processId,
    };
    await this.#query(PUBLISH_SQL, [
      this.#o.pool,
      endpointId,
      JSON.stringify(facts),
      JSON.stringify(message),
    ]);
  }

  async loadHealth(): Promise<SharedHealthMessage[]> {
    const r = await this.#query<{ endpoint_id: string; facts: SharedHealthFacts }>(
      'select endpoint_id, facts from coordination_health where pool = $1',
      [this.#o.pool],
    );
    // Rows are not trusted (the listener checks each): one bad row must not hide the others.
    return r.rows.map((row) => ({ endpointId: row.endpoint_id, facts: row.facts, from: '' }));
  }

  onWake(listener: () => void): void {
    this.#wake.add(listener);
  }

  onHealth(listener: (message: SharedHealthMessage) => void): void {
    this.#health.add(listener);
  }

  onLost(listener: (error: unknown) => void): void {
    this.#lost.add(listener);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const listener = this.#listener;
    this.#listener = undefined;
    this.#conns.close();
    this.#batch.close(new CoordinationUnavailableError('the coordination backend is closed'));
    // A server that does not answer (a frozen network path) must not hold the process: bounded, then dropped.
    await boundedClose(
      Promise.allSettled([listener?.end(), this.#pool.end(), ...[...this.#connecting].map((p) => p.end())]),
      1_000,
    );
    for (const c of [...this.#clients, ...(listener ? [listener] : [])])
      (c as unknown as { connection?: { stream?: { destroy(): void } } }).connection?.stream?.destroy();
  }

  /** Slot rows 0 … limit-1 exist (idempotent; only the first call per limit goes to the server). */
  #slotsReady = 0;
  async #ensureSlots(limit: number): Promise<void> {
    if (limit <= this.#slotsReady) return;
    await this.#query(
      // Slot -1 is the pool's "someone waits" mark.
      `insert into coordination_tokens (pool, slot) select $1, g from generate_series(-1, $2::int - 1) g
       on conflict do nothing`,
      [this.#o.pool, limit],
    );
    this.#slotsReady = Math.max(this.#slotsReady, limit);
  }

  /** The dedicated LISTEN connection (a pooled one would lose its subscriptions). Re-made after a loss. */
  #listen(): Promise<void> {
    if (this.#listening) return this.#listening;
    if (this.#closed)
      return Promise.reject(new CoordinationUnavailableError('the coordination backend is closed'));
    const client = new pg.Client({
      connectionString: this.#o.url,
      connectionTimeoutMillis: this.#o.timeoutMs ?? 5_000,
      keepAlive: true,
      application_name: 'breakwater-coordination-listen',
    });
    const lost = (e: unknown) => {
      if (this.#listener !== client) return;
      this.#listener = undefined;
      this.#listening = undefined;
      if (!this.#closed) for (const l of this.#lost) l(e);
    };
    client.on('error', lost);
    client.on('end', () => lost(new Error('the LISTEN connection ended')));
    client.on('notification', (n) => {
      if (n.channel === TOKENS_CHANNEL) {
        if (n.payload === this.#o.pool) for (const l of this.#wake) l();
      } else if (n.channel === HEALTH_CHANNEL && n.payload) {
        let m: unknown;
        try {
          m = JSON.parse(n.payload);
        } catch {
          return;
        }
        // Anyone may NOTIFY on the channel: only the pool is looked at here, the listener checks the rest.
        if (typeof m === 'object' && m !== null && (m as { pool?: unknown }).pool === this.#o.pool)
          for (const l of this.#health) l(m as SharedHealthMessage);
      }
    });
    this.#listener = client;
    this.#listening = (async () => {
      try {
        await client.connect();
        await client.query(`listen ${TOKENS_CHANNEL}`);
        await client.query(`listen ${HEALTH_CHANNEL}`);
        // close() ran while this connection was being made: it may have missed it (not yet connecting).
        if (this.#closed) throw new CoordinationUnavailableError('the coordination backend is closed');
      } catch (e) {
        this.#listener = undefined;
        this.#listening = undefined;
        void client.end().catch(() => {});
        throw this.#closed ? e : withStep(e, 'could not subscribe to wake-ups (LISTEN)');
      }
    })();
    return this.#listening;
  }

  async #query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    if (this.#closed) throw new CoordinationUnavailableError('the coordination backend is closed');
    // Wake-ups are lost while the LISTEN connection is down: it is re-made on the next use.
    if (!this.#listening) void this.#listen().catch(() => {});
    // Named: each connection plans a statement once (planning costs as much as running these small ones).
    const name = PREPARED.get(text);
    const config = name ? { name, text, values } : { text, values };
    const closed = () =>
      this.#closed ? new CoordinationUnavailableError('the coordination backend is closed') : undefined;
    try {
      // A connection cut under the statement (terminated by an administrator, a proxy's idle cut) while the server
      // is up: asked again on fresh connections, bounded (see connect-ride-out.ts), not failed closed at once (its
      // waiters would answer degraded). Every statement here may run more than once: an acquire whose answer was
      // lost holds a token until its TTL (never over the limit), a take counts high, and releases, renewals,
      // claims and publications are idempotent. A statement that timed out is not asked again: a server that does
      // not answer is failed closed at once.
      return await rideOutCuts(
        () => this.#conns.query<R>(config),
        statementRideOut(this.#o.connections ?? 4),
        undefined,
        closed,
        () => this.#conns.dropIdle(),
      );
    } catch (e) {
      if (this.#closed) throw closed();
      if (isConnectCut(e) || isConnectionFailure(e) || isUnavailableText(e))
        throw this.#unavailable(e, 'lost', e as { attempts?: number; elapsedMs?: number });
      throw e;
    }
  }

  #unavailable(
    e: unknown,
    what: string,
    tries: { attempts?: number; elapsedMs?: number } = {},
  ): CoordinationUnavailableError {
    const text = e instanceof Error ? e.message : String(e);
    const code = (e as { code?: unknown } | null)?.code;
    const problem =
      code === 'ECONNREFUSED'
        ? 'connection refused (is the server running, on that port?)'
        : scrubSecrets(text.replace(/\s+/g, ' ').trim()) || 'connection failed';
    const after =
      tries.attempts !== undefined && tries.attempts > 1
        ? `, after ${tries.attempts} attempts over ${((tries.elapsedMs ?? 0) / 1000).toFixed(1)} s`
        : '';
    return new CoordinationUnavailableError(
      `coordination.url: ${this.location} is unreachable (${what}: ${problem}${after}); not sending (fail closed)`,
      { cause: e },
    );
  }
}

/** The window length is part of the name: processes on another clock scale never read each other's slots. */
function rateKey(key: string, windowMs: number): string {
  return `${key}@${windowMs}`;
}

async function boundedClose(closing: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([closing, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/** The error of a step of connect(), marked with the step (the one message says which failed). */
function withStep(e: unknown, step: string): Error {
  return Object.assign(e instanceof Error ? e : new Error(String(e)), { step });
}

/** Which step of connect() an error came from (set by #connectOnce and #listen). */
function connectStep(e: unknown): string {
  const step = (e as { step?: unknown } | null)?.step;
  return typeof step === 'string' ? step : 'could not connect';
}

function isUnavailableText(e: unknown): boolean {
  return e instanceof Error && /Connection terminated|timeout|ECONN|closed|ended/i.test(e.message);
}
