import { randomBytes } from 'node:crypto';
import pg from 'pg';

/*
 * The names and the server-side work behind "every test file on its own database": a template database migrated once
 * per `vitest run` (test/support/database-global-setup.ts), and per-file databases copied from it
 * (test/support/per-file-database.ts). Shared by the main process (global setup) and the test workers.
 *
 * Names: `bwtpl_<run>` (the template), `bwt_<run>_<random>_<file>` (a file's database), where `<run>` is
 * `<seconds since 1970, base 36>_<random>`, so the age of a leftover is in its name. A run holds one connection named
 * `breakwater-tests <run>` for its whole life: databases of a run that holds none (it crashed, or was killed) are
 * dropped by the next run's global setup.
 */

/** The server and shared database the tests were pointed at: env `DATABASE_URL`, else the local default. */
export const SERVER_URL = process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/test';

/** application_name of the connection a run holds while alive (the prefix; the run's tag follows). */
export const RUN_HOLDER_PREFIX = 'breakwater-tests ';

/** A database or key-prefix name of a run no other run can have. */
export function newRunTag(now = Date.now()): string {
  return `${Math.floor(now / 1000).toString(36)}_${randomBytes(3).toString('hex')}`;
}

export function templateName(run: string): string {
  return `bwtpl_${run}`;
}

/** A per-file database of this run: at most 63 characters, the file's name in it for whoever lists databases. */
export function fileDatabaseName(run: string, file: string): string {
  const slug = (file.split('/').pop() ?? 'file')
    .replace(/\.test\.ts$/, '')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '_')
    .slice(0, 30);
  return `bwt_${run}_${randomBytes(3).toString('hex')}_${slug}`;
}

/** The run tag in a name made above, with its start in ms; undefined for names that are not ours. */
export function parseRunTag(name: string): { run: string; startedMs: number } | undefined {
  const m = /^(?:bwtpl|bwt)_([0-9a-z]{5,9})_([0-9a-f]{6})(?:_|$)/.exec(name);
  if (!m) return undefined;
  return { run: `${m[1]}_${m[2]}`, startedMs: Number.parseInt(m[1] as string, 36) * 1000 };
}

/** `url` with another database name (user, host, port and parameters kept). */
export function urlOfDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${database}`;
  return u.toString();
}

/** The shared database's name (the one no test may use): `test` unless DATABASE_URL names another. */
export function sharedDatabaseName(url = SERVER_URL): string {
  return decodeURIComponent(new URL(url).pathname.replace(/^\//, '')) || 'postgres';
}

/** A connection to the server's maintenance database `postgres`, for CREATE/DROP DATABASE. */
export async function connectAdmin(applicationName = 'breakwater-tests admin'): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: urlOfDatabase(SERVER_URL, 'postgres'),
    application_name: applicationName,
    connectionTimeoutMillis: 10_000,
  });
  // A server going away under an idle holder connection must not crash the run: the tests will say so.
  client.on('error', () => {});
  await client.connect();
  return client;
}

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * Copies the template into a new database. Retried while the template is still "being accessed by other users"
 * (55006): the connection that migrated it may take a moment to end on the server.
 */
export async function createFromTemplate(admin: pg.Client, name: string, template: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await admin.query(`create database ${quote(name)} template ${quote(template)}`);
      return;
    } catch (e) {
      if ((e as { code?: string }).code !== '55006' || attempt >= 20) throw e;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/**
 * Drops databases, several at once: DROP DATABASE forces a checkpoint, which takes ~1.5 s each on this machine one
 * after another under load, and ~2 s for ten at once (concurrent requests share checkpoints).
 */
export async function dropDatabases(names: readonly string[], concurrency = 8): Promise<string[]> {
  const failed: string[] = [];
  const queue = [...names];
  const worker = async () => {
    const admin = await connectAdmin('breakwater-tests drop');
    try {
      for (let name = queue.shift(); name !== undefined; name = queue.shift()) {
        try {
          // A template cannot be dropped; the flag is cleared first (no-op for an ordinary database).
          await admin.query(`alter database ${quote(name)} is_template false`).catch(() => {});
          await admin.query(`drop database if exists ${quote(name)} with (force)`);
        } catch {
          failed.push(name);
        }
      }
    } finally {
      await admin.end().catch(() => {});
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, names.length) }, worker));
  return failed;
}

/** Every database of ours on the server, with its run. */
export async function listTestDatabases(
  admin: pg.Client,
): Promise<{ name: string; run: string; startedMs: number }[]> {
  const { rows } = await admin.query<{ datname: string }>(
    `select datname from pg_database where datname like 'bwt%'`,
  );
  return rows.flatMap((r) => {
    const tag = parseRunTag(r.datname);
    return tag ? [{ name: r.datname, ...tag }] : [];
  });
}

/** The runs alive now: those holding their `breakwater-tests <run>` connection. */
export async function liveRuns(admin: pg.Client): Promise<Set<string>> {
  const { rows } = await admin.query<{ application_name: string }>(
    'select application_name from pg_stat_activity where application_name like $1',
    [`${RUN_HOLDER_PREFIX}%`],
  );
  return new Set(rows.map((r) => r.application_name.slice(RUN_HOLDER_PREFIX.length)));
}
