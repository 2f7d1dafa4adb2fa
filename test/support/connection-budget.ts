import pg from 'pg';
import { SERVER_URL, urlOfDatabase } from './test-databases.ts';

/*
 * The PostgreSQL server's connections (max_connections, 100 by default) shared by the test files running at once.
 * A file with worker processes holds 30-45 of them at its peak (each worker's store pool, its coordination pool, its
 * LISTEN connections); four such files started together (the slowest start first) went over the server's limit, and
 * a worker whose connection was refused ("sorry, too many clients already") failed its run. So each file takes the
 * connections it may hold from this budget before it makes its database, and gives them back when it ends.
 *
 * The budget is a set of session-level advisory locks, one per connection, on the `postgres` maintenance database,
 * taken on one connection the file holds while it runs: a file that dies (kill -9, a crashed worker) gives its
 * share back with its connection, by the server, with nothing to clean. One more lock queues the takers: whoever
 * holds it takes connections as they are given back until it has all it asked for, so a file that needs many is not
 * overtaken forever by files that need few. Advisory locks are per server and database, so concurrent `vitest` runs
 * on one server share the budget, as they share the server's limit.
 */

/** Advisory lock keys (two-int form) of the tests' budget: the queue's lock is (ns, -1), a connection's (ns, slot). */
const BUDGET_NAMESPACE = 0x62770001;

/** How often a waiting file looks for connections given back. */
const POLL_MS = 200;

/** A file's share of the budget, given back by {@link ConnectionShare.release} (or by its death). */
export interface ConnectionShare {
  readonly connections: number;
  /** How long the file waited for its share, in ms. */
  readonly waitedMs: number;
  release(): Promise<void>;
}

/**
 * How many connections test files may hold at once: the server's `max_connections`, less the connections reserved
 * for superusers and a margin for the runs' own admin connections (the run holder, database copies and drops).
 */
export async function connectionBudgetOf(client: pg.Client): Promise<number> {
  const { rows } = await client.query<{ max: string; reserved: string }>(
    "select current_setting('max_connections') as max, current_setting('superuser_reserved_connections') as reserved",
  );
  const [row] = rows;
  return Math.max(1, Number(row?.max) - Number(row?.reserved) - ADMIN_MARGIN);
}

/** Connections outside any file's share: a run's holder, its create and drop connections, a developer's psql. */
const ADMIN_MARGIN = 8;

/**
 * Takes `connections` of the budget (at most the whole budget), waiting while other files hold it, within
 * `timeoutMs`; the share includes the connection that holds it.
 */
export async function takeConnections(
  connections: number,
  budget: number,
  file: string,
  timeoutMs: number,
  namespace = BUDGET_NAMESPACE,
): Promise<ConnectionShare> {
  const queueKey: readonly [number, number] = [namespace, -1];
  const wanted = Math.min(Math.max(1, connections), budget);
  const started = performance.now();
  const client = new pg.Client({
    connectionString: urlOfDatabase(SERVER_URL, 'postgres'),
    // The shared-database guard exempts the helpers' connections by this prefix.
    application_name: `breakwater-tests budget ${wanted}`,
    connectionTimeoutMillis: 10_000,
  });
  client.on('error', () => {});
  await client.connect();
  const held: number[] = [];
  try {
    while (!(await tryLock(client, queueKey))) {
      overdue(started, timeoutMs, file, wanted, budget);
      await sleep(POLL_MS);
    }
    try {
      for (;;) {
        for (let slot = 0; slot < budget && held.length < wanted; slot++) {
          if (held.includes(slot)) continue;
          if (await tryLock(client, [namespace, slot])) held.push(slot);
        }
        if (held.length >= wanted) break;
        overdue(started, timeoutMs, file, wanted, budget);
        await sleep(POLL_MS);
      }
    } finally {
      await client.query('select pg_advisory_unlock($1, $2)', [...queueKey]);
    }
  } catch (e) {
    await client.end().catch(() => {});
    throw e;
  }
  const waitedMs = performance.now() - started;
  return {
    connections: wanted,
    waitedMs,
    // Ending the session gives back every lock it holds.
    release: () => client.end().catch(() => {}),
  };
}

/** One advisory lock, if free: held by this session until unlocked or the session ends. */
async function tryLock(client: pg.Client, key: readonly [number, number]): Promise<boolean> {
  const { rows } = await client.query<{ ok: boolean }>('select pg_try_advisory_lock($1, $2) as ok', [...key]);
  return rows[0]?.ok === true;
}

function overdue(started: number, timeoutMs: number, file: string, wanted: number, budget: number): void {
  if (performance.now() - started < timeoutMs) return;
  throw new Error(
    `${file} waited ${Math.round(timeoutMs / 1000)} s for ${wanted} of the ${budget} PostgreSQL connections the test files share ` +
      '(test/support/connection-budget.ts): another file holds them for longer than any file runs, or a process outside ' +
      'the tests holds the locks; see pg_locks where locktype is advisory',
  );
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
