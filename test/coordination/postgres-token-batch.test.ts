import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { leaseKey } from '../../src/coordination/coordination-backend.ts';
import { backendsPerTest, postgresUrl, postgresAdminPerFile } from '../support/coordination-env.ts';

/*
 * PostgreSQL gathers a process's token acquires and releases into one statement per round trip
 * (src/coordination/postgres-token-batch.ts). What must hold whatever gets batched with what: a grant never goes
 * past the limit, each granted lease is a distinct row of this process, a caller left over is refused (not
 * granted twice), and a release whose row another transaction holds locked is still done once that lock goes.
 */

const backends = backendsPerTest();
const admin = postgresAdminPerFile();

async function held(pool: string): Promise<{ slot: number; holder: string }[]> {
  const r = await admin().query<{ slot: number; holder: string }>(
    'select slot, holder from coordination_tokens where pool = $1 and slot >= 0 and holder is not null and expires_at > now() order by slot',
    [pool],
  );
  return r.rows;
}

describe('postgres: batched token statements', () => {
  it('20 acquires at once under limit 12 from two processes: at most 12 grants, each a distinct row held by its taker', async () => {
    const { o, pool } = backends.freshPostgres();
    const [a, b] = [await backends.open(o, 'a'), await backends.open(o, 'b')];
    const asks = [...Array.from({ length: 10 }, () => a), ...Array.from({ length: 10 }, () => b)];
    const results = await Promise.all(asks.map((x) => x.tryAcquire(12)));
    const granted = results.flatMap((r, i) => (r.ok ? [{ lease: r.lease, by: i < 10 ? 'a' : 'b' }] : []));
    // Some of the refused may have met a row locked by the other process's statement: never more than 12.
    expect(granted.length).toBeLessThanOrEqual(12);
    expect(new Set(granted.map((g) => g.lease.slot)).size).toBe(granted.length);
    const rows = await held(pool);
    expect(rows.map((r) => String(r.slot)).sort()).toEqual(granted.map((g) => g.lease.slot).sort());
    for (const g of granted) expect(rows.find((r) => String(r.slot) === g.lease.slot)?.holder).toBe(g.by);
    // Everything given back at once (one statement per process): the pool is free again, and all 12 can be taken.
    await Promise.all(granted.map((g) => (g.by === 'a' ? a : b).release(g.lease)));
    expect(await held(pool)).toEqual([]);
    const again = await Promise.all(Array.from({ length: 12 }, () => a.tryAcquire(12)));
    expect(again.filter((r) => r.ok)).toHaveLength(12);
    expect(await held(pool)).toHaveLength(12);
  });

  it('a release and an acquire in one statement never hand the released slot to the acquire in that statement', async () => {
    const { o, pool } = backends.freshPostgres();
    const a = await backends.open(o, 'a');
    const first = await a.tryAcquire(1);
    if (!first.ok) throw new Error('the only token was not granted');
    // Asked in the same turn: gathered into one statement, whose acquire cannot see the release.
    const [, second] = await Promise.all([a.release(first.lease), a.tryAcquire(1)]);
    if (second.ok) {
      // Granted only by a statement after the release: a new generation of the slot.
      expect(second.lease.generation).toBeGreaterThan(first.lease.generation);
      expect(await held(pool)).toHaveLength(1);
    } else expect(await held(pool)).toEqual([]);
  });

  it('a release whose row is locked by another transaction waits for the lock and is then done', async () => {
    const { o, pool } = backends.freshPostgres();
    const a = await backends.open(o, 'a');
    const r = await a.tryAcquire(2);
    if (!r.ok) throw new Error('no token granted');
    const locker = new pg.Client({ connectionString: postgresUrl() });
    await locker.connect();
    try {
      await locker.query('begin');
      await locker.query('select 1 from coordination_tokens where pool = $1 and slot = $2 for update', [
        pool,
        Number(r.lease.slot),
      ]);
      let done = false;
      const releasing = a.release(r.lease).then(() => {
        done = true;
      });
      // The batch skips the locked row; the statement after it waits: not done while the lock is held.
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(done).toBe(false);
      expect(await held(pool)).toHaveLength(1);
      await locker.query('commit');
      await releasing;
      expect(await held(pool)).toEqual([]);
    } finally {
      await locker.end();
    }
  });

  it('a stale lease given back in a batch frees nothing of its new holder', async () => {
    const { o, pool } = backends.freshPostgres();
    const a = await backends.open(o, 'a');
    const r = await a.tryAcquire(1);
    if (!r.ok) throw new Error('no token granted');
    await a.release(r.lease);
    const again = await a.tryAcquire(1);
    if (!again.ok) throw new Error('no token granted again');
    expect(leaseKey(again.lease)).not.toBe(leaseKey(r.lease));
    await a.release(r.lease); // the old generation: refused by the batch and by the statement after it
    expect(await held(pool)).toHaveLength(1);
    await a.release(again.lease);
    expect(await held(pool)).toEqual([]);
  });
});
