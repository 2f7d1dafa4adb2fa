import { redactUrl } from '../redact/secret-scrubber.ts';
import { findDatabaseUnavailable } from '../store/database-unavailable-error.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import { type BreakwaterDatabase, openDatabase } from '../store/open-database.ts';
import { CliError } from './cli-error.ts';

/** The store options every command that touches the store takes. */
export interface StoreCliOptions {
  /** PostgreSQL connection string. Default: none (then `dataDir`, env `DATABASE_URL`, else PGlite). */
  readonly databaseUrl?: string;
  /** PGlite data directory. Default: env `BREAKWATER_DATA_DIR`, else `.breakwater/`. */
  readonly dataDir?: string;
  /** Environment read for `DATABASE_URL` / `BREAKWATER_DATA_DIR`. Default: `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Most connections of the PostgreSQL pool. Default: `openDatabase`'s (10). */
  readonly poolSize?: number;
  /** Aborts the open. Default none. */
  readonly signal?: AbortSignal;
}

/** True for a string that says something. */
export const isSet = (v: string | undefined): v is string => v !== undefined && v.trim() !== '';

/**
 * A database URL fit for a message: no password (in the user part or as `?password=`), no key-like
 * parameter.
 *
 * @example
 * ```ts
 * withoutPassword('postgres://app:pw@db/x?password=pw'); // 'postgres://app@db/x?password=***'
 * ```
 */
export function withoutPassword(url: string): string {
  return redactUrl(url);
}

/**
 * The PostgreSQL URL a command will use (`--database-url`, else env `DATABASE_URL` unless `--data-dir` was
 * given); `undefined` means PGlite. Refuses both flags. Messages only ever show it through
 * {@link withoutPassword}.
 *
 * @example
 * ```ts
 * const url = storeUrl({ dataDir: '.breakwater' }); // undefined: PGlite
 * ```
 */
export function storeUrl(options: StoreCliOptions): string | undefined {
  const env = options.env ?? process.env;
  if (isSet(options.databaseUrl) && isSet(options.dataDir))
    throw new CliError('give either --database-url (PostgreSQL) or --data-dir (embedded PGlite), not both');
  const url = isSet(options.databaseUrl)
    ? options.databaseUrl
    : isSet(options.dataDir)
      ? undefined
      : env.DATABASE_URL;
  if (!isSet(url)) return undefined;
  return url;
}

/**
 * Opens the store a command names (PGlite or PostgreSQL, as {@link storeUrl} and `openDatabase` choose). A
 * server that cannot be used becomes one CliError that says what to do, without the password.
 *
 * @example
 * ```ts
 * const database = await openCliDatabase({ dataDir: '.breakwater' });
 * ```
 */
export async function openCliDatabase(options: StoreCliOptions): Promise<BreakwaterDatabase> {
  const url = storeUrl(options);
  try {
    const timeouts = databaseTimeouts(process.env.BREAKWATER_DB_TIMEOUT_MS);
    return await openDatabase({
      ...(url ? { url } : {}),
      ...(isSet(options.dataDir) ? { dataDir: options.dataDir } : {}),
      ...(options.poolSize !== undefined ? { poolSize: options.poolSize } : {}),
      ...(timeouts ? { timeouts } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (e) {
    const lost = findDatabaseUnavailable(e);
    if (lost) {
      const fix = url
        ? 'start the server or fix --database-url / DATABASE_URL (without either, breakwater uses embedded PGlite)'
        : 'fix --data-dir / BREAKWATER_DATA_DIR';
      throw new CliError(`cannot use ${lost.location}: ${lost.problem}; ${fix}`, { cause: e });
    }
    throw e;
  }
}

/**
 * `BREAKWATER_DB_TIMEOUT_MS`: how long the CLI waits on a PostgreSQL server that does not answer (connect, each
 * query and statement, fail-fast after a loss; idle in a transaction 3×) before it stops with one line. Default
 * 10 000 (unset). A value that is not a whole number of ms between 1 000 and 600 000 is refused.
 */
function databaseTimeouts(raw: string | undefined) {
  if (raw === undefined || raw === '') return undefined;
  const ms = Number(raw);
  if (!(Number.isInteger(ms) && ms >= 1_000 && ms <= 600_000))
    throw new ConfigError({
      source: 'environment',
      path: 'BREAKWATER_DB_TIMEOUT_MS',
      message: `is ${JSON.stringify(raw)}; set a whole number of ms between 1000 and 600000, or unset it`,
    });
  return {
    connectTimeoutMs: ms,
    queryTimeoutMs: ms,
    statementTimeoutMs: ms,
    quarantineMs: ms,
    idleInTransactionTimeoutMs: 3 * ms,
  };
}
