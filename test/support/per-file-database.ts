import pg from 'pg';
import { afterAll, beforeAll, inject } from 'vitest';
import { type ConnectionShare, takeConnections } from './connection-budget.ts';
import { DEFAULT_FILE_CONNECTIONS } from './file-order.ts';
import {
  SERVER_URL,
  connectAdmin,
  createFromTemplate,
  fileDatabaseName,
  sharedDatabaseName,
  urlOfDatabase,
} from './test-databases.ts';

/*
 * Every test file that touches PostgreSQL gets a database of its own, copied from the run's migrated template
 * (test/support/database-global-setup.ts), and every test file its own Redis key prefix. Files never see each other's
 * rows, LISTEN/NOTIFY channels, advisory locks or keys, whatever runs beside them.
 *
 *   perFileDatabase();                       // at the top of the test file: the database is made in beforeAll
 *   openDatabase({ url: postgresUrl() });    // in hooks and tests (never at import: the URL is the file's)
 *   spawn(..., { env: process.env })         // children: DATABASE_URL is the file's database while it runs
 *   { keyPrefix: redisKeyPrefix() }          // Redis: keys under it are deleted when the file ends
 *
 * vitest runs files one after another in a worker with `isolate: false`, so this module's state is per worker and
 * reset for each file by test/support/per-file-setup.ts; nothing here may be read into a module-level constant.
 */

interface FileState {
  readonly file: string;
  registered: boolean;
  shared: boolean;
  share: ConnectionShare | undefined;
  /** The share as taken (kept after release, for the file's timeline record). */
  shareTaken: { readonly connections: number; readonly waitedMs: number } | undefined;
  database: { readonly name: string; readonly url: string } | undefined;
  redisPrefix: string | undefined;
}

let current: FileState | undefined;

function fileState(): FileState {
  if (!current)
    throw new Error(
      'per-file-database: used outside a test file (is test/support/per-file-setup.ts in setupFiles?)',
    );
  return current;
}

/** The helper to name in errors, so whoever meets one knows what to write. */
const HOW =
  'call perFileDatabase() from test/support/per-file-database.ts at the top of the test file, then use postgresUrl() ' +
  'inside hooks and tests (children get it as DATABASE_URL)';

/** Starts a test file's state; called by the setup file before each file. */
export function beginTestFile(file: string): void {
  current = {
    file,
    registered: false,
    shared: false,
    share: undefined,
    shareTaken: undefined,
    database: undefined,
    redisPrefix: undefined,
  };
  // A file without a database of its own must not reach one through the environment (a child it spawns, or
  // openDatabase() without options): nothing is inherited from the runner or from the file before.
  delete process.env.DATABASE_URL;
}

/** The Redis key prefix the file used, if any, so the setup file can delete its keys. */
export function endTestFile(): { redisPrefix: string | undefined; connections: number; waitedMs: number } {
  const state = current;
  current = undefined;
  delete process.env.DATABASE_URL;
  return {
    redisPrefix: state?.redisPrefix,
    connections: state?.shareTaken?.connections ?? 0,
    waitedMs: state?.shareTaken?.waitedMs ?? 0,
  };
}

/** Options of {@link perFileDatabase}. */
export interface PerFileDatabaseOptions {
  /**
   * The most PostgreSQL connections the file holds at once, its children's included: its share of the budget the
   * files running at once split (test/support/connection-budget.ts). Measure a file with worker processes
   * (`pg_stat_activity` grouped by `datname` while it runs) and declare its peak with some room.
   * @default 8
   */
  readonly connections?: number;
}

/** How long a file may wait for its share: longer than any file runs, so only a leak or a foreign holder reaches it. */
const SHARE_TIMEOUT_MS = 15 * 60_000;

/**
 * Gives this test file a PostgreSQL database of its own: copied from the run's migrated template in `beforeAll`
 * (so it has the latest schema and no rows), set as `DATABASE_URL` while the file runs (children inherit it), and
 * dropped with the run's other databases when the run ends. Before it, the file takes its share of the server's
 * connections ({@link shareOfConnections}). Call it at the top of the file; a second call in the same file is a no-op.
 *
 * @example
 * ```ts
 * perFileDatabase();
 * beforeAll(async () => { database = await openDatabase({ url: postgresUrl() }); });
 * ```
 */
export function perFileDatabase(options: PerFileDatabaseOptions = {}): void {
  const state = fileState();
  if (state.registered) return;
  state.registered = true;
  shareOfConnections(options.connections ?? DEFAULT_FILE_CONNECTIONS);
  beforeAll(async () => {
    if (state.database) return;
    const ctx = inject('testDatabases');
    if (!ctx.template) throw new Error(ctx.unavailable ?? 'no template database for this run');
    const name = fileDatabaseName(ctx.run, state.file);
    const admin = await connectAdmin('breakwater-tests create');
    try {
      await createFromTemplate(admin, name, ctx.template);
    } finally {
      await admin.end().catch(() => {});
    }
    state.database = { name, url: urlOfDatabase(SERVER_URL, name) };
    process.env.DATABASE_URL = state.database.url;
  });
}

/**
 * Takes the file's share of the server's connections before its other hooks (waiting while the files running
 * beside it hold the budget) and gives it back after them. {@link perFileDatabase} calls it; a file that makes
 * its PostgreSQL databases itself (the crash suite drops and terminates its own) calls it at its top.
 *
 * @example
 * ```ts
 * shareOfConnections(45); // three workers and their parent, at their peak
 * ```
 */
export function shareOfConnections(connections: number): void {
  const state = fileState();
  if (state.shared) return;
  state.shared = true;
  beforeAll(async () => {
    const ctx = inject('testDatabases');
    if (!ctx.template) return;
    state.share = await takeConnections(connections, ctx.connectionBudget, state.file, SHARE_TIMEOUT_MS);
    state.shareTaken = { connections: state.share.connections, waitedMs: state.share.waitedMs };
  }, SHARE_TIMEOUT_MS + 60_000);
  // Registered before the file's own hooks, so it runs after them (vitest stacks after-hooks): pools closed by then.
  afterAll(async () => {
    await state.share?.release();
    state.share = undefined;
  });
}

/**
 * The URL of this test file's own database (see {@link perFileDatabase}). Throws, naming the helper, when the file
 * has none yet (not registered, or read at import time before `beforeAll` made it).
 *
 * @example
 * ```ts
 * const client = new pg.Client({ connectionString: postgresUrl() });
 * ```
 */
export function postgresUrl(): string {
  const state = fileState();
  if (state.database) return state.database.url;
  throw new Error(
    `${state.file} has no PostgreSQL database of its own ${state.registered ? 'yet (read postgresUrl() in hooks and tests, not at import)' : ''}: ${HOW}`,
  );
}

/** The name of this test file's database (for `pg_stat_activity.datname`, say). */
export function postgresDatabaseName(): string {
  postgresUrl();
  return fileState().database!.name;
}

/**
 * The Redis key prefix of this test file: `bwtest:bwt_<run>_<random>_<file>:`. Keys under it are deleted when the
 * file ends; those of a run that crashed, by the next run.
 *
 * @example
 * ```ts
 * const options = { backend: 'redis', url: REDIS_URL, keyPrefix: redisKeyPrefix(), pool: 'p' };
 * ```
 */
export function redisKeyPrefix(): string {
  const state = fileState();
  state.redisPrefix ??= `bwtest:${fileDatabaseName(inject('testDatabases').run, state.file)}:`;
  return state.redisPrefix;
}

/** Thrown (as a connection error) when a test connects to the shared database. */
export const SHARED_DATABASE_CODE = 'BW_TEST_SHARED_DATABASE';

export function isSharedDatabaseError(e: unknown): e is Error & { code: typeof SHARED_DATABASE_CODE } {
  return e instanceof Error && (e as { code?: unknown }).code === SHARED_DATABASE_CODE;
}

const GUARDED = Symbol.for('breakwater.tests.sharedDatabaseGuard');

/**
 * Makes every `pg` connection of this process to the shared database (`test`, or the one DATABASE_URL named when the
 * run started) fail before it reaches the server, with an error naming the file and the helper to use. Installed by
 * the setup file, once per worker process.
 */
export function installSharedDatabaseGuard(): void {
  const proto = pg.Client.prototype as unknown as Record<PropertyKey, unknown> & {
    connect: (this: pg.Client, callback?: (err: Error | null) => void) => Promise<void> | undefined;
  };
  if (proto[GUARDED]) return;
  const connect = proto.connect;
  proto.connect = function guardedConnect(this: pg.Client, callback?: (err: Error | null) => void) {
    const { database, connectionParameters } = this as {
      database?: string;
      connectionParameters?: { application_name?: string };
    };
    // The helpers' own admin connections (CREATE/DROP DATABASE) are exempt, in case the shared one is `postgres`.
    const admin = connectionParameters?.application_name?.startsWith('breakwater-tests ') ?? false;
    if (!admin && database !== undefined && database === sharedName()) {
      const file = current?.file ?? 'a test file';
      const refusal = Object.assign(
        new Error(
          `${file} connected to the shared database "${database}": every test file uses a database of its own. ${HOW}.`,
        ),
        { code: SHARED_DATABASE_CODE },
      );
      if (callback) {
        process.nextTick(() => callback(refusal));
        return undefined;
      }
      return Promise.reject(refusal);
    }
    return connect.call(this, callback);
  };
  proto[GUARDED] = true;
}

function sharedName(): string {
  try {
    return inject('testDatabases').shared;
  } catch {
    return sharedDatabaseName();
  }
}
