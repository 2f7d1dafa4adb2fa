import { randomInt } from 'node:crypto';
import pg from 'pg';
import { describe, expect, inject, it } from 'vitest';
import { connectionBudgetOf, takeConnections } from './connection-budget.ts';
import { connectAdmin, SERVER_URL, urlOfDatabase } from './test-databases.ts';

/*
 * The budget of PostgreSQL connections the test files share: a file waits while others hold it, gets it when they
 * give it back or die, and a wait that never ends says what to look at. Each test uses a lock namespace of its own,
 * so the suite's real budget (which this file's neighbours hold meanwhile) is not touched.
 */

const namespace = () => randomInt(1_000_000, 2_000_000_000);

describe('the connection budget of the test files', () => {
  it("is the server limit less the superusers' reserve and the admin margin", async () => {
    const admin = await connectAdmin();
    try {
      const { rows } = await admin.query<{ max: string; reserved: string }>(
        "select current_setting('max_connections') as max, current_setting('superuser_reserved_connections') as reserved",
      );
      expect(await connectionBudgetOf(admin)).toBe(Number(rows[0]?.max) - Number(rows[0]?.reserved) - 8);
      expect(inject('testDatabases').connectionBudget).toBe(await connectionBudgetOf(admin));
    } finally {
      await admin.end();
    }
  });

  it('a share that does not fit waits until the holder gives its share back', async () => {
    const ns = namespace();
    const first = await takeConnections(6, 10, 'first.test.ts', 10_000, ns);
    expect(first.connections).toBe(6);
    let second: Awaited<ReturnType<typeof takeConnections>> | undefined;
    const taking = takeConnections(6, 10, 'second.test.ts', 10_000, ns).then((s) => {
      second = s;
    });
    // The second asks the server several times meanwhile (every 200 ms): it is still waiting after 1 s.
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    expect(second).toBeUndefined();
    await first.release();
    await taking;
    expect(second?.connections).toBe(6);
    await second?.release();
  });

  it('shares that fit are held at once; a share larger than the budget is cut to it', async () => {
    const ns = namespace();
    const a = await takeConnections(4, 10, 'a.test.ts', 5_000, ns);
    const b = await takeConnections(6, 10, 'b.test.ts', 5_000, ns);
    expect(b.waitedMs).toBeLessThan(5_000);
    await Promise.all([a.release(), b.release()]);
    const whole = await takeConnections(50, 10, 'big.test.ts', 5_000, ns);
    expect(whole.connections).toBe(10);
    await whole.release();
  });

  it('a holder that dies without a word gives its share back: the server ends its locks with its session', async () => {
    const ns = namespace();
    // A holder as a file's: one session holding locks of the budget, then cut (kill -9 of its process).
    const holder = new pg.Client({
      connectionString: urlOfDatabase(SERVER_URL, 'postgres'),
      application_name: 'breakwater-tests holder',
    });
    holder.on('error', () => {});
    await holder.connect();
    for (let slot = 0; slot < 10; slot++) await holder.query('select pg_advisory_lock($1, $2)', [ns, slot]);
    const { rows } = await holder.query<{ pid: number }>('select pg_backend_pid() as pid');
    const taking = takeConnections(3, 10, 'after.test.ts', 10_000, ns);
    await new Promise((resolve) => setTimeout(resolve, 500));
    const admin = await connectAdmin();
    try {
      await admin.query('select pg_terminate_backend($1)', [rows[0]?.pid]);
    } finally {
      await admin.end();
    }
    const share = await taking;
    expect(share.connections).toBe(3);
    await share.release();
    await holder.end().catch(() => {});
  });

  it('a wait past its bound fails naming the file, the share and where to look', async () => {
    const ns = namespace();
    const held = await takeConnections(10, 10, 'holder.test.ts', 5_000, ns);
    try {
      const error = await takeConnections(2, 10, 'test/x/waiting.test.ts', 600, ns).then(
        () => undefined,
        (e: unknown) => e as Error,
      );
      expect(error?.message).toContain(
        'test/x/waiting.test.ts waited 1 s for 2 of the 10 PostgreSQL connections',
      );
      expect(error?.message).toContain('test/support/connection-budget.ts');
      expect(error?.message).toContain('pg_locks');
    } finally {
      await held.release();
    }
  });
});
