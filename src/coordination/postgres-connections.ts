import { Kysely, PostgresDialect } from 'kysely';
import pg from 'pg';
import { migrateToLatest } from '../store/migrate-to-latest.ts';
import { CoordinationUnavailableError } from './coordination-errors.ts';
import { withStep } from './postgres-coordination-errors.ts';
import type { PostgresNotifications } from './postgres-notifications.ts';

/** The connections a backend's close() cuts: every client of its pools, while the pool holds it. */
export type TrackedClients = Set<pg.Client | pg.PoolClient>;

/**
 * The backend's pool: the pinned statements' `max` connections and one more, so connect()'s check and migrations
 * always find one. Its clients are tracked in `clients`.
 */
export function statementPool(url: string, timeout: number, max: number, clients: TrackedClients): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
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
  pool.on('error', () => {});
  track(pool, clients);
  return pool;
}

/** A connect attempt's own pool (its check and the migration), ended after it. Its clients are tracked too. */
export function attemptPool(url: string, timeout: number, clients: TrackedClients): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    // The migrator holds one connection for its lock and its transactions; one more for kysely's own look.
    max: 2,
    connectionTimeoutMillis: timeout,
    query_timeout: timeout,
    statement_timeout: timeout,
    application_name: 'breakwater-coordination',
  });
  pool.on('error', () => {});
  // Its connections are close()'s to cut too: a migration waiting on a lock must not hold a closed backend.
  track(pool, clients);
  return pool;
}

/** What an attempt of connect() works with: the backend's tracked clients, attempts and LISTEN connection. */
export interface AttemptParts {
  readonly url: string;
  readonly timeoutMs: number;
  readonly clients: TrackedClients;
  /** The pools of connect attempts under way: ended by close() (their connections must not outlive it). */
  readonly connecting: Set<pg.Pool>;
  readonly notifications: PostgresNotifications;
  /** Whether the backend's close() was called. */
  readonly closed: () => boolean;
}

/**
 * One attempt of the backend's connect(): none of its connections is one a cut before it could have broken (a pool
 * made for it and ended after it, then the LISTEN connection).
 */
export async function connectOnce(parts: AttemptParts, signal: AbortSignal | undefined): Promise<void> {
  const pool = attemptPool(parts.url, parts.timeoutMs, parts.clients);
  parts.connecting.add(pool);
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
    parts.connecting.delete(pool);
    await boundedClose(
      pool.end().catch(() => {}),
      1_000,
    );
  }
  // Closed while connecting (a runtime stopped at once): no LISTEN connection may be opened after close().
  if (parts.closed()) throw new CoordinationUnavailableError('the coordination backend is closed');
  await parts.notifications.listen();
}

/** Waits for `closing`, at most `ms`: a server that does not answer must not hold the process. */
export async function boundedClose(closing: Promise<unknown>, ms: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([closing, new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

function track(pool: pg.Pool, clients: TrackedClients): void {
  pool.on('connect', (client) => {
    clients.add(client);
    client.on('error', () => {});
  });
  pool.on('remove', (client) => clients.delete(client));
}
