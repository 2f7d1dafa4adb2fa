import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isConnectCut } from '../../src/coordination/connect-ride-out.ts';
import { PostgresCoordination } from '../../src/coordination/postgres-coordination.ts';
import { cleanPool, perFileDatabase, postgresUrl } from '../support/coordination-env.ts';

perFileDatabase();

/*
 * The connections of a PostgreSQL coordination backend terminated (`pg_terminate_backend`, the server stays up)
 * exactly while it connects. Deterministic: the test holds the migrator's advisory lock (kysely's PostgreSQL
 * adapter takes it on every migrateToLatest, even with nothing to apply), so each connect attempt is seen waiting
 * for it in pg_stat_activity, in the middle of its migration, and terminated there; the lock is let go when the
 * test is done cutting. No part of breakwater is replaced.
 */

/** kysely's PostgreSQL migration lock (node_modules/kysely/dist/esm/dialect/postgres/postgres-adapter.js). */
const MIGRATION_LOCK_ID = '3853314791062309107';

let admin: pg.Client;
let backend: PostgresCoordination | undefined;
let pool: string;
/** Backends this test terminated. */
const cut = new Set<number>();

beforeEach(async () => {
  admin = new pg.Client({ connectionString: postgresUrl() });
  await admin.connect();
  await admin.query(`select pg_advisory_lock(${MIGRATION_LOCK_ID})`);
  pool = `ride-${randomUUID().slice(0, 8)}`;
  cut.clear();
});

afterEach(async () => {
  await backend?.close();
  backend = undefined;
  await admin.end();
  await cleanPool({ backend: 'postgres', url: postgresUrl(), pool });
});

/** Polls the server until `check` holds; the bound only stops a broken test. */
async function until(check: () => Promise<boolean>, what: string, maxMs: number): Promise<void> {
  const deadline = Date.now() + maxMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`waited ${maxMs} ms for ${what}; it never happened`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** Waits for a coordination connection blocked on the migration lock, terminates it, and says which pid. */
async function cutTheMigration(): Promise<number> {
  let pid = 0;
  await until(
    async () => {
      const { rows } = await admin.query<{ pid: number }>(
        `select pid from pg_stat_activity
         where datname = current_database() and application_name = 'breakwater-coordination'
           and wait_event_type = 'Lock' and query like '%pg_advisory_lock%'`,
      );
      // A backend cut a moment ago may still be listed while it exits: only a new one is cut.
      pid = rows.find((r) => !cut.has(r.pid))?.pid ?? 0;
      return pid !== 0;
    },
    'a coordination connect waiting on the migration lock',
    30_000,
  );
  const { rows } = await admin.query<{ ok: boolean }>('select pg_terminate_backend($1) as ok', [pid]);
  expect(rows[0]?.ok).toBe(true);
  cut.add(pid);
  return pid;
}

function open(connectRideOut?: ConstructorParameters<typeof PostgresCoordination>[0]['connectRideOut']) {
  backend = new PostgresCoordination({
    url: postgresUrl(),
    pool,
    processId: 'p1',
    leaseTtlMs: 10_000,
    // Generous: only the lock held by the test makes a statement wait, and the test cuts it within ms.
    timeoutMs: 20_000,
    ...(connectRideOut ? { connectRideOut } : {}),
  });
  return backend;
}

describe('PostgreSQL coordination: connections terminated while connecting', () => {
  it('each attempt on fresh connections: connected after two cuts in its migration, and usable', async () => {
    const b = open();
    const connecting = b.connect();
    let settled = false;
    void connecting.then(
      () => (settled = true),
      () => (settled = true),
    );
    const first = await cutTheMigration();
    const second = await cutTheMigration();
    // A new attempt is a new connection (the cut one is never asked again).
    expect(second).not.toBe(first);
    expect(settled).toBe(false);
    await admin.query(`select pg_advisory_unlock(${MIGRATION_LOCK_ID})`);
    await connecting;
    const got = await b.tryAcquire(1);
    expect(got.ok).toBe(true);
  }, 90_000);

  it('cut on every attempt: one error with a code after the bounded attempts, naming the cut', async () => {
    const b = open({ windowMs: 120_000, attempts: 3, firstPauseMs: 10, maxPauseMs: 20 });
    const connecting = b.connect().then(
      () => undefined,
      (e: unknown) => e,
    );
    for (let i = 0; i < 3; i++) await cutTheMigration();
    const error = (await connecting) as (Error & { code?: string }) | undefined;
    expect(error?.code).toBe('COORDINATION_UNAVAILABLE');
    expect(error?.message).toMatch(
      /^coordination\.url: PostgreSQL at .* is unreachable \(could not prepare the coordination tables: .*terminat.*, after 3 attempts over \d+\.\d s\); not sending \(fail closed\)$/,
    );
    // No fourth attempt was made: no connection of the backend but the three cut (some may still be exiting).
    const { rows } = await admin.query<{ pid: number }>(
      `select pid from pg_stat_activity where datname = current_database() and application_name = 'breakwater-coordination'`,
    );
    expect(rows.filter((r) => !cut.has(r.pid))).toEqual([]);
  }, 90_000);

  it('closed while an attempt waits: stops at once with the closed error, its connections ended', async () => {
    const b = open();
    const connecting = b.connect().then(
      () => undefined,
      (e: unknown) => e,
    );
    await until(
      async () =>
        (
          await admin.query(
            `select 1 from pg_stat_activity where datname = current_database()
             and application_name = 'breakwater-coordination' and wait_event_type = 'Lock'`,
          )
        ).rows.length > 0,
      'a coordination connect waiting on the migration lock',
      30_000,
    );
    const closedAt = Date.now();
    await b.close();
    const error = (await connecting) as (Error & { code?: string }) | undefined;
    // Far under the statement timeout (20 s) the waiting migration would otherwise hold it for.
    expect(Date.now() - closedAt).toBeLessThan(10_000);
    expect(error?.code).toBe('COORDINATION_UNAVAILABLE');
    expect(error?.message).toBe('the coordination backend is closed');
  }, 90_000);

  it('statements whose connections are terminated twice under them are all answered, none fails closed', async () => {
    await admin.query(`select pg_advisory_unlock(${MIGRATION_LOCK_ID})`);
    const b = open();
    await b.connect();
    // The test holds the health table: every statement reading it waits there, on its connection, to be cut. On a
    // connection of its own: pg_stat_activity is read once per transaction, the lock's would never see a change.
    const holder = new pg.Client({ connectionString: postgresUrl() });
    await holder.connect();
    await holder.query('begin');
    await holder.query('lock table coordination_health in access exclusive mode');
    const asks = Promise.allSettled(Array.from({ length: 6 }, () => b.loadHealth()));
    // Twice: each statement's next attempt waits again on a fresh connection, and is cut again.
    for (let i = 0; i < 2; i++) {
      const pids = await waitingOnTheLock(4);
      const { rows } = await admin.query<{ ok: boolean }>(
        'select pg_terminate_backend(pid) as ok from unnest($1::int[]) pid',
        [pids],
      );
      expect(rows.every((r) => r.ok)).toBe(true);
      for (const p of pids) cut.add(p);
    }
    await holder.query('commit');
    await holder.end();
    const answers = await asks;
    expect(answers.filter((a) => a.status === 'rejected')).toEqual([]);
  }, 90_000);
});

/** The pids of `n` coordination statements newly waiting for the table lock the test holds. */
async function waitingOnTheLock(n: number): Promise<number[]> {
  let pids: number[] = [];
  await until(
    async () => {
      const { rows } = await admin.query<{ pid: number }>(
        `select pid from pg_stat_activity
         where datname = current_database() and application_name = 'breakwater-coordination'
           and wait_event_type = 'Lock' and query like '%coordination_health%'`,
      );
      pids = rows.map((r) => r.pid).filter((p) => !cut.has(p));
      return pids.length >= n;
    },
    `${n} coordination statements waiting on the health table`,
    30_000,
  );
  return pids;
}

describe('what counts as a connection cut while connecting', () => {
  it("kysely's discarded connection (a migration whose rollback met the cut) is a cut; a refusal and a timeout are not", () => {
    // Seen in workers-db-terminate: the migration's error carried only this message, not the terminated connection.
    const discarded = new Error('database migration failed', {
      cause: new Error('Postgres connection has been discarded'),
    });
    expect(isConnectCut(discarded)).toBe(true);
    expect(
      isConnectCut(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' })),
    ).toBe(false);
    expect(isConnectCut(new Error('timeout expired'))).toBe(false);
    expect(isConnectCut(new Error('relation "x" does not exist'))).toBe(false);
  });
});
