import type pg from 'pg';
import { redactUrl } from '../redact/secret-scrubber.ts';
import { isConnectionFailure } from '../store/guarded-pg-pool.ts';
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
import { connectStep, isUnavailableText, unavailableError } from './postgres-coordination-errors.ts';
import {
  CLAIM_PROBE_SQL,
  END_PROBE_SQL,
  PREPARED,
  PUBLISH_SQL,
  REFUND_RATE_SQL,
  RELEASE_SQL,
  RENEW_SQL,
  rateKey,
  SWEEP_PROBES_SQL,
  TAKE_RATE_SQL,
  WAIT_SQL,
} from './postgres-coordination-sql.ts';
import {
  type AttemptParts,
  boundedClose,
  connectOnce,
  statementPool,
  type TrackedClients,
} from './postgres-connections.ts';
import { PostgresNotifications } from './postgres-notifications.ts';
import {
  PostgresTokenBatcher,
  TOKEN_BATCH_SQL,
  type TokenBatch,
  type TokenBatchResult,
} from './postgres-token-batch.ts';

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

/** How many given-back slots a process remembers as its first places to look. */
const FREED_KEPT = 64;

/** After a fresh wait mark, the one look again: longer than a release statement takes, ms. */
const FRESH_MARK_RECHECK_MS = 25;

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
  /** The LISTEN connection: wake-ups and health messages. */
  readonly #notifications: PostgresNotifications;
  #closed = false;
  #spread = Math.floor(Math.random() * 1_000);
  /** Slots this process gave back, newest last (at most `limit`): where its next acquisitions look first. */
  readonly #freed: number[] = [];
  readonly #clients: TrackedClients = new Set();
  /** The pools of connect attempts under way: ended by close() (their connections must not outlive it). */
  readonly #connecting = new Set<pg.Pool>();
  /** What each attempt of connect() works with. */
  readonly #attempts: AttemptParts;

  constructor(options: PostgresCoordinationOptions) {
    this.#o = options;
    this.location = `PostgreSQL at ${redactUrl(options.url)}`;
    const timeout = options.timeoutMs ?? 5_000;
    const max = options.connections ?? 4;
    this.#pool = statementPool(options.url, timeout, max, this.#clients);
    this.#conns = new PinnedPgClients(this.#pool, max);
    this.#batch = new PostgresTokenBatcher((b) => this.#runBatch(b), options.tokenStatementsInFlight ?? 2);
    this.#notifications = new PostgresNotifications(options.url, timeout, options.pool, () => this.#closed);
    this.#attempts = {
      url: options.url,
      timeoutMs: timeout,
      clients: this.#clients,
      connecting: this.#connecting,
      notifications: this.#notifications,
      closed: () => this.#closed,
    };
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
        () => connectOnce(this.#attempts, signal),
        this.#o.connectRideOut ?? DEFAULT_CONNECT_RIDE_OUT,
        signal,
        closed,
      );
    } catch (e) {
      if (this.#closed) throw closed();
      throw unavailableError(
        this.location,
        e,
        connectStep(e),
        e as { attempts?: number; elapsedMs?: number },
      );
    }
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
    this.#notifications.onWake(listener);
  }

  onHealth(listener: (message: SharedHealthMessage) => void): void {
    this.#notifications.onHealth(listener);
  }

  onLost(listener: (error: unknown) => void): void {
    this.#notifications.onLost(listener);
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const listener = this.#notifications.detach();
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

  async #query<R extends pg.QueryResultRow>(text: string, values: unknown[]): Promise<pg.QueryResult<R>> {
    if (this.#closed) throw new CoordinationUnavailableError('the coordination backend is closed');
    // Wake-ups are lost while the LISTEN connection is down: it is re-made on the next use.
    if (!this.#notifications.listening) void this.#notifications.listen().catch(() => {});
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
        throw unavailableError(this.location, e, 'lost', e as { attempts?: number; elapsedMs?: number });
      throw e;
    }
  }
}
