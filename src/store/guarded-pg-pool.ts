import type { PostgresPool, PostgresPoolClient } from 'kysely';
import pg from 'pg';
import { type Clock, systemClock } from '../clock/clock.ts';
import { redactUrl, scrubSecrets } from '../redact/secret-scrubber.ts';
import { DatabaseUnavailableError } from './database-unavailable-error.ts';

/**
 * A `pg` pool for kysely that cannot hang or crash the process: every wait on the server is bounded
 * (connect, each query, each statement on the server, idle in a transaction), a connection that fails is
 * destroyed instead of reused, a client's socket error is handled instead of becoming an unhandled
 * `'error'` event, a lost server fails fast for a while instead of making every caller wait out its own
 * timeout, and closing gives up on a server that does not answer.
 */

/**
 * Options of {@link createGuardedPool}. Every wait is in ms.
 *
 * @example
 * ```ts
 * const options: GuardedPoolOptions = { url: process.env.DATABASE_URL!, queryTimeoutMs: 5_000 };
 * ```
 */
export interface GuardedPoolOptions {
  /** The PostgreSQL connection string. Required. */
  readonly url: string;
  /** Maximum connections. Default 10. */
  readonly max?: number;
  /** Connecting (TCP, TLS, startup and authentication) must finish within this. Default 10 000. */
  readonly connectTimeoutMs?: number;
  /** The client gives up on one query's answer after this (the connection is then destroyed). Default 10 000. */
  readonly queryTimeoutMs?: number;
  /** The server cancels a statement running longer than this (`statement_timeout`). Default 10 000. */
  readonly statementTimeoutMs?: number;
  /** The server ends a session idle inside a transaction this long (`idle_in_transaction_session_timeout`). Default 30 000. */
  readonly idleInTransactionTimeoutMs?: number;
  /** After a connection-level failure, new work fails at once for this long. Default 10 000. */
  readonly quarantineMs?: number;
  /** `close()` waits this long for the server before it drops the sockets. Default 2 000. */
  readonly closeTimeoutMs?: number;
  /** Time source of the quarantine. Default `systemClock`. */
  readonly clock?: Clock;
}

/**
 * What {@link createGuardedPool} returns.
 *
 * @example
 * ```ts
 * const { pool, location, close } = createGuardedPool({ url });
 * ```
 */
export interface GuardedPool {
  /** For kysely's `PostgresDialect({ pool })`. */
  readonly pool: PostgresPool;
  /** `PostgreSQL at <url without password>`. */
  readonly location: string;
  /** Ends every connection; bounded by `closeTimeoutMs`, then the sockets are destroyed. Safe to call twice. */
  close(): Promise<void>;
}

/** Driver error codes that mean the server or the connection is gone, not that the SQL was wrong. */
const CONNECTION_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ECONNABORTED',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'ENETUNREACH',
  '57P01', // admin_shutdown
  '57P02', // crash_shutdown
  '57P03', // cannot_connect_now
  '53300', // too_many_connections
]);

// "connection has been discarded" is kysely's: a transaction's rollback failed on a broken connection, and the
// next statement on it (a migration's lock release, say) says only that, without the cut as its cause.
const CONNECTION_TEXT =
  /timeout expired|Connection terminated|Query read timeout|connection (?:timeout|error)|not queryable|unknown message code|invalid (?:response|message)|Received unexpected|unexpected (?:end|message)|socket hang up|ERR_SOCKET|ECONNRESET|read ECONN|Unsupported frontend protocol|ssl negotiation|The server does not support SSL|connection has been discarded/i;

interface DriverError {
  code?: unknown;
  message?: unknown;
}

/**
 * True when `e` says the connection or the server failed (not the statement).
 *
 * @example
 * ```ts
 * isConnectionFailure(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })); // true
 * isConnectionFailure(Object.assign(new Error('syntax error'), { code: '42601' }));                // false
 * ```
 */
export function isConnectionFailure(e: unknown): boolean {
  if (typeof e !== 'object' || e === null) return false;
  const { code, message } = e as DriverError;
  if (typeof code === 'string' && (CONNECTION_CODES.has(code) || /^08/.test(code))) return true;
  return typeof message === 'string' && CONNECTION_TEXT.test(message);
}

function problemOf(
  e: unknown,
  o: Required<Pick<GuardedPoolOptions, 'connectTimeoutMs' | 'queryTimeoutMs'>>,
): string {
  const { code, message } = (e ?? {}) as DriverError;
  const text = typeof message === 'string' ? message : '';
  if (/Query read timeout/.test(text)) return `no answer to a query within ${o.queryTimeoutMs} ms`;
  if (/timeout expired|connection timeout/i.test(text))
    return `no answer while connecting within ${o.connectTimeoutMs} ms`;
  if (code === 'ECONNREFUSED') return 'connection refused (is the server running, on that port?)';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'the host name does not resolve';
  if (/Connection terminated|ECONNRESET|socket hang up|EPIPE/i.test(`${text} ${String(code)}`))
    return 'the server closed the connection';
  if (/unknown message code|invalid (?:response|message)|Received unexpected|unexpected message/i.test(text))
    return 'the server did not answer as PostgreSQL does';
  const flat = scrubSecrets(text.replace(/\s+/g, ' ').trim());
  return flat ? flat : `connection failed (${String(code ?? 'no code')})`;
}

type PgClient = pg.PoolClient & { connection?: { stream?: { destroy(err?: Error): void } } };

/** Every wait of the pool, defaults applied (once, in {@link createGuardedPool}). */
type ResolvedPoolWaits = Required<Omit<GuardedPoolOptions, 'url' | 'clock'>>;

/**
 * Creates a bounded, crash-proof `pg` pool for kysely (see the module comment).
 *
 * @example
 * ```ts
 * const guarded = createGuardedPool({ url: process.env.DATABASE_URL! });
 * const db = new Kysely<Schema>({ dialect: new PostgresDialect({ pool: guarded.pool }) });
 * // …
 * await db.destroy(); // ends the pool, bounded
 * ```
 */
export function createGuardedPool(options: GuardedPoolOptions): GuardedPool {
  const o: ResolvedPoolWaits = {
    max: options.max ?? 10,
    connectTimeoutMs: options.connectTimeoutMs ?? 10_000,
    queryTimeoutMs: options.queryTimeoutMs ?? 10_000,
    statementTimeoutMs: options.statementTimeoutMs ?? 10_000,
    idleInTransactionTimeoutMs: options.idleInTransactionTimeoutMs ?? 30_000,
    quarantineMs: options.quarantineMs ?? 10_000,
    closeTimeoutMs: options.closeTimeoutMs ?? 2_000,
  };
  const clock = options.clock ?? systemClock;
  const location = `PostgreSQL at ${redactUrl(options.url)}`;
  const raw = new pg.Pool({
    connectionString: options.url,
    max: o.max,
    connectionTimeoutMillis: o.connectTimeoutMs,
    query_timeout: o.queryTimeoutMs,
    statement_timeout: o.statementTimeoutMs,
    idle_in_transaction_session_timeout: o.idleInTransactionTimeoutMs,
    keepAlive: true,
    application_name: 'breakwater',
  });
  const clients = new Set<PgClient>();
  let lost: { until: number; problem: string } | undefined;

  const unavailable = (e: unknown): DatabaseUnavailableError => {
    const problem = problemOf(e, o);
    lost = { until: clock.now() + o.quarantineMs, problem };
    return new DatabaseUnavailableError({ location, problem, cause: e });
  };

  // An idle client whose server goes away emits 'error' on the pool; a checked-out one emits it on
  // itself. Without listeners either crashes the process.
  raw.on('error', (e) => {
    if (isConnectionFailure(e)) unavailable(e);
  });
  raw.on('connect', (client) => {
    const c = client as PgClient;
    clients.add(c);
    c.on('error', (e) => {
      if (isConnectionFailure(e)) unavailable(e);
      dropClient(c);
    });
  });
  raw.on('remove', (client) => clients.delete(client as PgClient));

  const pool: PostgresPool = {
    async connect(): Promise<PostgresPoolClient> {
      if (lost && clock.now() < lost.until) {
        // The cause already waited out its timeout: the rest of the run's work fails at once with it.
        throw new DatabaseUnavailableError({ location, problem: lost.problem });
      }
      let client: PgClient;
      try {
        client = (await raw.connect()) as PgClient;
      } catch (e) {
        throw isConnectionFailure(e) ? unavailable(e) : e;
      }
      lost = undefined;
      return guardedClient(client, unavailable);
    },
    end: () => endBounded(raw, clients, o.closeTimeoutMs),
  };
  let closing: Promise<void> | undefined;
  return {
    pool,
    location,
    close() {
      closing ??= pool.end();
      return closing;
    },
  };
}

/** Destroys a client's socket (a connection that failed is never reused). */
function dropClient(client: PgClient): void {
  try {
    client.connection?.stream?.destroy();
  } catch {
    // already gone
  }
}

/**
 * A checked-out client for kysely whose connection-level failures are `unavailable(e)` (the pool's quarantine), and
 * whose connection, once broken by one, is destroyed on release instead of going back to the pool.
 */
function guardedClient(
  client: PgClient,
  unavailable: (e: unknown) => DatabaseUnavailableError,
): PostgresPoolClient {
  let broken = false;
  return {
    query: ((sqlOrCursor: unknown, parameters?: ReadonlyArray<unknown>) => {
      if (typeof sqlOrCursor !== 'string') return client.query(sqlOrCursor as never);
      return client.query(sqlOrCursor, parameters as unknown[]).catch((e: unknown) => {
        if (!isConnectionFailure(e)) throw e;
        // pg leaves a timed-out query active on its connection: nothing else could run on it.
        broken = true;
        dropClient(client);
        throw unavailable(e);
      });
    }) as unknown as PostgresPoolClient['query'],
    release() {
      client.release(broken ? true : undefined);
    },
  };
}

/** Ends the pool, waiting at most `closeTimeoutMs` for the server, then destroys every socket still open. */
async function endBounded(raw: pg.Pool, clients: Set<PgClient>, closeTimeoutMs: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, closeTimeoutMs);
  });
  await Promise.race([raw.end().catch(() => {}), gaveUp]);
  clearTimeout(timer);
  for (const c of clients) dropClient(c);
  clients.clear();
}
