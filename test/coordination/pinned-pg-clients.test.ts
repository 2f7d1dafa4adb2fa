import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { PinnedPgClients } from '../../src/coordination/pinned-pg-clients.ts';
import { perFileDatabase, postgresUrl } from '../support/coordination-env.ts';
import { waitFor } from '../support/wait-for.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
perFileDatabase();

/* The connections the PostgreSQL coordination backend keeps checked out between statements, on the real server. */

const pools: pg.Pool[] = [];
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.end()));
});

function open(max: number) {
  const pool = new pg.Pool({ connectionString: postgresUrl(), max });
  pool.on('error', () => {});
  const ended = { count: 0 };
  pool.on('connect', (c) => c.on('end', () => ended.count++));
  pools.push(pool);
  return { pool, clients: new PinnedPgClients(pool, max), ended };
}

const pid = async (c: PinnedPgClients) =>
  (await c.query<{ pid: number }>({ text: 'select pg_backend_pid() as pid' })).rows[0]!.pid;

describe('PinnedPgClients', () => {
  it('runs more concurrent queries than connections on at most `max`, and reuses them', async () => {
    const { pool, clients } = open(2);
    const pids = await Promise.all(
      Array.from({ length: 8 }, async () => {
        const r = await clients.query<{ pid: number }>({
          text: 'select pg_backend_pid() as pid, pg_sleep(0.02)',
        });
        return r.rows[0]!.pid;
      }),
    );
    expect(new Set(pids).size).toBeLessThanOrEqual(2);
    expect(pool.totalCount).toBeLessThanOrEqual(2);
    const again = await Promise.all([pid(clients), pid(clients)]);
    for (const p of again) expect(pids).toContain(p);
    clients.close();
  });

  it('a connection whose query failed is destroyed and replaced; one that ended while idle is not used', async () => {
    const { pool, clients, ended } = open(1);
    const first = await pid(clients);
    await expect(clients.query({ text: 'select no_such_column' })).rejects.toThrow(/no_such_column/);
    const second = await pid(clients);
    expect(second).not.toBe(first);
    expect(pool.totalCount).toBe(1);
    // The server ends the idle connection: the next query gets a new one instead of an error.
    const admin = new pg.Client({ connectionString: postgresUrl() });
    await admin.connect();
    try {
      await admin.query('select pg_terminate_backend($1)', [second]);
    } finally {
      await admin.end();
    }
    // Both connections (the failed one, destroyed, and the terminated one) have ended here.
    await waitFor(() => ended.count === 2, 'the end of the terminated connection');
    const third = await pid(clients);
    expect(third).not.toBe(second);
    expect(pool.totalCount).toBe(1);
    clients.close();
  });

  it('a waiter gets the connection of a failed query back as a new one (never more than `max`)', async () => {
    const { pool, clients } = open(1);
    const failing = clients.query({ text: 'select pg_sleep(0.05), no_such_column' });
    const waiting = pid(clients);
    await expect(failing).rejects.toThrow(/no_such_column/);
    expect(await waiting).toBeGreaterThan(0);
    expect(pool.totalCount).toBe(1);
    clients.close();
  });

  it('after close() queries fail, and the pool can end (every connection given back)', async () => {
    const { pool, clients } = open(2);
    await Promise.all([pid(clients), pid(clients)]);
    clients.close();
    await expect(pid(clients)).rejects.toThrow(/closed/);
    await pool.end();
    pools.splice(pools.indexOf(pool), 1);
    expect(pool.totalCount).toBe(0);
  });
});
