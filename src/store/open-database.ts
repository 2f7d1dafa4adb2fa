import { mkdir } from 'node:fs/promises';
import { resolve } from 'node:path';
import { Kysely, PostgresDialect } from 'kysely';
import { PGliteDialect } from 'kysely-pglite-dialect';
import { DatabaseUnavailableError } from './database-unavailable-error.ts';
import { createGuardedPool, type GuardedPoolOptions } from './guarded-pg-pool.ts';
import { migrateToLatest } from './migrate-to-latest.ts';
import { isDataDirInUseError, lockDataDir } from './pglite-lock.ts';
import { isIncompleteClusterError } from './incomplete-cluster-error.ts';
import { createPGlite } from './pglite-template.ts';
import type { StoreSchema } from './store-schema.ts';
import { redactUrl } from '../redact/secret-scrubber.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import { firstBytesFrom, notPostgresAnswer, POSTGRES_SSL_REQUEST } from '../core/errors/foreign-server.ts';

/**
 * Which engine is behind a {@link BreakwaterDatabase}.
 *
 * @example
 * ```ts
 * if (database.backend === 'pglite') console.log(`data in ${database.location}`);
 * ```
 */
export type DatabaseBackend = 'pglite' | 'postgres';

/**
 * The `dataDir` value that keeps PGlite in memory (nothing survives `close()`); meant for tests.
 *
 * @example
 * ```ts
 * const database = await openDatabase({ dataDir: IN_MEMORY });
 * ```
 */
export const IN_MEMORY = ':memory:';

/**
 * The PGlite data directory when neither `dataDir` nor `BREAKWATER_DATA_DIR` is given (under the cwd).
 *
 * @example
 * ```ts
 * await rm(DEFAULT_DATA_DIR, { recursive: true }); // forget every local run
 * ```
 */
export const DEFAULT_DATA_DIR = '.breakwater';

/**
 * Options of {@link openDatabase}.
 *
 * @example
 * ```ts
 * await openDatabase({ url: process.env.DATABASE_URL, poolSize: 4, signal });
 * ```
 */
export interface OpenDatabaseOptions {
  /**
   * A PostgreSQL connection string (`postgres://user@host:5432/db`). When given, a `pg` pool is used.
   * Default: none — then `dataDir` if given, else env `DATABASE_URL`, else PGlite.
   */
  readonly url?: string;
  /**
   * PGlite's data directory, relative to the cwd, or `':memory:'`. Default: env `BREAKWATER_DATA_DIR`,
   * else `.breakwater/`. An explicit `dataDir` wins over env `DATABASE_URL` (so tests can ask for
   * PGlite on a machine where `DATABASE_URL` is set).
   */
  readonly dataDir?: string;
  /** Maximum connections of the `pg` pool. Default 10. Ignored for PGlite (one connection). */
  readonly poolSize?: number;
  /**
   * Bounds on every wait on a PostgreSQL server, in ms (PGlite runs in-process and needs none): connect
   * 10 000, each query 10 000 (client side), each statement 10 000 (`statement_timeout`), idle in a
   * transaction 30 000, fail-fast after a lost connection 10 000, close 2 000. A server that does not
   * answer in time makes the call reject with `DatabaseUnavailableError`. Default: those values.
   */
  readonly timeouts?: Pick<
    GuardedPoolOptions,
    | 'connectTimeoutMs'
    | 'queryTimeoutMs'
    | 'statementTimeoutMs'
    | 'idleInTransactionTimeoutMs'
    | 'quarantineMs'
    | 'closeTimeoutMs'
  >;
  /** Aborts the open (checked before connecting and before migrating). */
  readonly signal?: AbortSignal;
}

/**
 * An open, migrated database.
 *
 * @example
 * ```ts
 * const { db, backend, close } = await openDatabase();
 * ```
 */
export interface BreakwaterDatabase {
  /** The kysely instance over the store's tables. */
  readonly db: Kysely<StoreSchema>;
  readonly backend: DatabaseBackend;
  /** Where the data lives: the PGlite directory, `:memory:`, or the server URL without its password. */
  readonly location: string;
  /** Migrations this open applied (empty when the schema was already current). */
  readonly migrated: readonly string[];
  /** Closes the pool or the PGlite instance. Safe to call twice. */
  close(): Promise<void>;
}

type Target = { backend: 'postgres'; url: string } | { backend: 'pglite'; dataDir: string };

function chooseTarget(options: OpenDatabaseOptions): Target {
  const nonEmpty = (s: string | undefined) => (s !== undefined && s.trim() !== '' ? s.trim() : undefined);
  const url = nonEmpty(options.url);
  if (url) return { backend: 'postgres', url };
  const dataDir = nonEmpty(options.dataDir);
  if (dataDir) return { backend: 'pglite', dataDir };
  const envUrl = nonEmpty(process.env.DATABASE_URL);
  if (envUrl) return { backend: 'postgres', url: envUrl };
  return { backend: 'pglite', dataDir: nonEmpty(process.env.BREAKWATER_DATA_DIR) ?? DEFAULT_DATA_DIR };
}

/**
 * A PostgreSQL URL that does not parse is bad input, said as such: the driver would read it as something
 * else (a database named "not a url" on a host named "base") and fail far from the cause ("the host name
 * does not resolve"). Never shown whole: it may hold a password.
 */
function checkPostgresUrl(url: string): void {
  let parsed: URL | undefined;
  try {
    parsed = new URL(url);
  } catch {
    parsed = undefined;
  }
  if (parsed && (parsed.protocol === 'postgres:' || parsed.protocol === 'postgresql:')) return;
  throw new ConfigError({
    source: '--database-url / DATABASE_URL',
    path: '',
    message: `${parsed ? `is a ${parsed.protocol.replace(/:$/, '')}: URL (${redactUrl(url)})` : 'does not parse as a URL (it is not shown: it may hold a password)'}; write it as postgres://user@host:5432/database (percent-encode @ : / in the password), or leave it out to use embedded PGlite`,
  });
}

async function connect(
  target: Target,
  options: OpenDatabaseOptions,
): Promise<{ db: Kysely<StoreSchema>; location: string; unlock?: () => void }> {
  if (target.backend === 'postgres') {
    checkPostgresUrl(target.url);
    const guarded = createGuardedPool({
      url: target.url,
      max: options.poolSize ?? 10,
      ...(options.timeouts ?? {}),
    });
    return {
      db: new Kysely<StoreSchema>({ dialect: new PostgresDialect({ pool: guarded.pool }) }),
      location: redactUrl(target.url),
    };
  }
  let unlock: (() => void) | undefined;
  try {
    // A fresh cluster starts from the cached initdb template (see pglite-template.ts): seconds saved per open.
    if (target.dataDir === IN_MEMORY) {
      const pglite = await createPGlite(undefined);
      return { db: new Kysely<StoreSchema>({ dialect: new PGliteDialect(pglite) }), location: IN_MEMORY };
    }
    const dir = resolve(process.cwd(), target.dataDir);
    await mkdir(dir, { recursive: true });
    // PGlite is single-process: a second process on the folder is refused before PGlite touches it.
    unlock = lockDataDir(dir);
    const pglite = await createPGlite(dir);
    return { db: new Kysely<StoreSchema>({ dialect: new PGliteDialect(pglite) }), location: dir, unlock };
  } catch (e) {
    unlock?.();
    if (isDataDirInUseError(e) || isIncompleteClusterError(e)) throw e;
    // PGlite's file system errors are plain objects ({ name: 'ErrnoError', errno }), not Errors.
    const { code, errno, message } = (e ?? {}) as { code?: unknown; errno?: unknown; message?: unknown };
    const why =
      typeof code === 'string'
        ? code
        : typeof message === 'string' && message
          ? message
          : `file system error${errno !== undefined ? ` ${String(errno)}` : ''}`;
    throw new DatabaseUnavailableError({
      location: `PGlite data directory ${target.dataDir}`,
      problem: `${why}; it must be a folder this user can write to`,
      cause: e,
    });
  }
}

/**
 * Opens breakwater's durable store and migrates it to the latest schema.
 *
 * Backend choice, first match wins: `options.url` → PostgreSQL; `options.dataDir` → PGlite there;
 * env `DATABASE_URL` → PostgreSQL; else PGlite in env `BREAKWATER_DATA_DIR` or `.breakwater/`.
 * Both backends run the same migrations and the same queries. PGlite takes a few seconds to start:
 * open once and share the instance. One PGlite directory is opened by one process at a time: a second
 * process gets a `DataDirInUseError` naming the holder (a lock file in the folder; a dead holder's is taken over).
 *
 * @example
 * ```ts
 * const database = await openDatabase({ dataDir: ':memory:' });
 * const store = createRunStore(database);
 * // …
 * await database.close();
 * ```
 */
export async function openDatabase(options: OpenDatabaseOptions = {}): Promise<BreakwaterDatabase> {
  options.signal?.throwIfAborted();
  const target = chooseTarget(options);
  if (target.backend === 'postgres') checkPostgresUrl(target.url);
  // One deadline for the whole wait on a server (look, connect, migrate): a connect timeout and then a query
  // timeout must not add up past what BREAKWATER_DB_TIMEOUT_MS promised.
  const deadlineMs = options.timeouts?.connectTimeoutMs ?? 10_000;
  const startedAt = Date.now();
  if (target.backend === 'postgres') await lookAtServer(target.url, deadlineMs);
  const { db, location, unlock } = await connect(target, options);
  let closed: Promise<void> | undefined;
  const close = () => {
    closed ??= db.destroy().finally(() => unlock?.());
    return closed;
  };
  let timer: NodeJS.Timeout | undefined;
  try {
    options.signal?.throwIfAborted();
    const migrating = migrateToLatest(db as Kysely<unknown>, { signal: options.signal });
    // Past the deadline it loses the race below and fails once the pool is closed: that is expected.
    migrating.catch(() => {});
    const migrated =
      target.backend === 'postgres'
        ? await Promise.race([
            migrating,
            new Promise<never>((_, reject) => {
              timer = setTimeout(
                () =>
                  reject(
                    new DatabaseUnavailableError({
                      location: `PostgreSQL at ${location}`,
                      problem: `no answer within ${deadlineMs} ms`,
                    }),
                  ),
                Math.max(0, deadlineMs - (Date.now() - startedAt)),
              );
            }),
          ])
        : await migrating;
    return Object.freeze({ db, backend: target.backend, location, migrated: Object.freeze(migrated), close });
  } catch (e) {
    // Not awaited past the deadline: the pool's own close is bounded, the caller's wait is not extended.
    void close().catch(() => {});
    throw e;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Looks at what answers the URL before the driver does: a server that speaks something else is said as
 * such at once (the driver would wait out its timeout and say "no answer"), and one that takes the
 * connection but never answers is said after `deadlineMs`, the whole wait.
 */
async function lookAtServer(url: string, deadlineMs: number): Promise<void> {
  const parsed = new URL(url);
  const host =
    decodeURIComponent(parsed.hostname.replace(/^\[|\]$/g, '')) ||
    parsed.searchParams.get('host') ||
    '127.0.0.1';
  // A Unix socket directory: the driver's own errors are plain enough there.
  if (host.startsWith('/')) return;
  const port = Number(parsed.port || parsed.searchParams.get('port') || 5432);
  const answer = await firstBytesFrom(host, port, POSTGRES_SSL_REQUEST, deadlineMs, (b) => b.length > 0);
  if (answer === undefined) return;
  const first = answer.bytes;
  const location = `PostgreSQL at ${redactUrl(url)}`;
  if (first.length === 0 && answer.closed)
    throw new DatabaseUnavailableError({
      location,
      problem: 'the server closed the connection without a word (not PostgreSQL, or refusing this client)',
    });
  if (first.length === 0)
    throw new DatabaseUnavailableError({
      location,
      problem: `no answer within ${deadlineMs} ms (the server took the connection and said nothing: frozen, or not PostgreSQL)`,
    });
  const foreign = await notPostgresAnswer(first);
  if (foreign) throw new DatabaseUnavailableError({ location, problem: foreign });
}
