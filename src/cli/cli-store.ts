import { registerSecret } from '../redact/secret-scrubber.ts';
import { type BreakwaterDatabase, openDatabase } from '../store/open-database.ts';
import { isMigrationError } from '../store/store-errors.ts';
import { CliError } from './cli-error.ts';

/** The store options every command that touches the store takes. */
export interface StoreCliOptions {
  /** PostgreSQL connection string. Default: none (then `dataDir`, env `DATABASE_URL`, else PGlite). */
  readonly databaseUrl?: string;
  /** PGlite data directory. Default: env `BREAKWATER_DATA_DIR`, else `.breakwater/`. */
  readonly dataDir?: string;
  /** Environment read for `DATABASE_URL` / `BREAKWATER_DATA_DIR`. Default: `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Aborts the open. Default none. */
  readonly signal?: AbortSignal;
}

/** True for a string that says something. */
export const isSet = (v: string | undefined): v is string => v !== undefined && v.trim() !== '';

/** pg/PostgreSQL error codes that mean "this server or database cannot be used as given". */
const CONNECTION_CODES: ReadonlySet<string> = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  '3D000', // database does not exist
  '28000', // role does not exist / not authorized
  '28P01', // wrong password
]);

/** A database URL without its password, for messages. */
export function withoutPassword(url: string): string {
  try {
    const u = new URL(url);
    u.password = '';
    return u.toString();
  } catch {
    return 'the given URL';
  }
}

/**
 * The PostgreSQL URL a command will use (`--database-url`, else env `DATABASE_URL` unless `--data-dir` was
 * given), with its password registered with the secret scrubber; `undefined` means PGlite. Refuses both flags.
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
  try {
    const password = new URL(url).password;
    if (password) registerSecret(decodeURIComponent(password));
  } catch {
    // Not a URL: pg reports that itself, and there is no password to hide.
  }
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
    return await openDatabase({
      ...(url ? { url } : {}),
      ...(isSet(options.dataDir) ? { dataDir: options.dataDir } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (e) {
    const cause = isMigrationError(e)
      ? (e.cause as { code?: unknown; message?: unknown } | undefined)
      : undefined;
    if (url && typeof cause?.code === 'string' && CONNECTION_CODES.has(cause.code)) {
      const problem = typeof cause.message === 'string' ? cause.message : cause.code;
      throw new CliError(
        `cannot use PostgreSQL at ${withoutPassword(url)}: ${problem}; start the server or fix ` +
          '--database-url / DATABASE_URL (without either, breakwater uses embedded PGlite)',
        { cause: e },
      );
    }
    throw e;
  }
}
