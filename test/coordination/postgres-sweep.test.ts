import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { backendsPerTest, postgresUrl, postgresAdminPerFile } from '../support/coordination-env.ts';

/*
 * PostgreSQL keeps no history in `coordination_rates` and `coordination_probes`: expired rows (of quotas, endpoints
 * or pools no longer used, or of a dead process) are deleted a minute after they expired, a bounded number per
 * write. Rows are planted with expiries far from the margins (minutes), so no verdict depends on this machine's
 * speed; other test files may sweep the same tables at the same time, so the bound is checked on rows no other
 * transaction can see.
 */

const backends = backendsPerTest();
const HOUR = 3_600_000;
const admin = postgresAdminPerFile();

async function count(table: string, pool: string, where = 'true'): Promise<number> {
  const r = await admin().query<{ n: number }>(
    `select count(*)::int as n from ${table} where pool = $1 and ${where}`,
    [pool],
  );
  return r.rows[0]!.n;
}

/** Rows of `pool` in coordination_rates: `n` that expired `ageSql` ago (slots 0 … n-1 of key `key`). */
async function plantRates(db: pg.ClientBase, pool: string, key: string, n: number, ageSql: string) {
  await db.query(
    `insert into coordination_rates (pool, rate_key, slot, requests, tokens, expires_at)
     select $1, $2, g, 1, 0, now() - $3::interval from generate_series(0, $4::int - 1) g`,
    [pool, key, ageSql, n],
  );
}

describe('postgres: expired coordination rows are removed', () => {
  it('rate slots of a quota no longer taken go once a minute past their expiry; newer ones stay', async () => {
    const { o, pool } = backends.freshPostgres();
    const a = await backends.open(o, 'a');
    await plantRates(admin(), pool, 'gone@60000', 40, '5 minutes');
    await plantRates(admin(), pool, 'recent@60000', 1, '10 seconds');
    await plantRates(admin(), pool, 'live@60000', 1, '-30 seconds');
    // Each take on a new quota opens a slot and sweeps: 40 rows need two sweeps, other files may sweep too.
    for (let i = 0; i < 10 && (await count('coordination_rates', pool, `rate_key = 'gone@60000'`)) > 0; i++)
      expect(
        (await a.takeRate({ key: `k${i}`, windowMs: 60_000, rpm: 10, tpm: undefined, tokens: 0 })).ok,
      ).toBe(true);
    expect(await count('coordination_rates', pool, `rate_key = 'gone@60000'`)).toBe(0);
    expect(await count('coordination_rates', pool, `rate_key in ('recent@60000', 'live@60000')`)).toBe(2);
    // The quotas just taken keep their slot (not expired).
    expect(await count('coordination_rates', pool, `rate_key like 'k%'`)).toBeGreaterThan(0);
  });

  it('one take that opens a slot deletes at most 32 expired rows, and a take into an open slot none', async () => {
    const pool = `t-${randomUUID().slice(0, 8)}`;
    const db = new pg.Client({ connectionString: postgresUrl() });
    await db.connect();
    // Inside one transaction that is rolled back: the planted rows are seen by this transaction's sweeps only.
    await db.query('begin');
    try {
      const take = async (key: string, windowMs = 60_000) =>
        (
          await db.query<{ slot: string }>(
            'select slot from coordination_take_rate($1, $2, $3, 1000, null, 0)',
            [pool, key, windowMs],
          )
        ).rows[0]!.slot;
      const expired = async () =>
        (
          await db.query<{ n: number }>(
            `select count(*)::int as n from coordination_rates where expires_at < clock_timestamp() - interval '1 minute'`,
          )
        ).rows[0]!.n;
      // Rows other tests left expired go first (bounded loop), so the next sweep can only take planted ones.
      for (let i = 0; i < 100 && (await expired()) > 0; i++) await take(`drain-${i}`);
      expect(await expired()).toBe(0);
      await plantRates(db, pool, 'old@60000', 40, '5 minutes');
      const slot = await take('first', HOUR);
      expect(await count2(db, pool)).toBe(8);
      // The same quota again: a take into its open slot does not sweep (a slot lasts a minute of this window; if it
      // turned in between, the take opened one and swept).
      const again = await take('first', HOUR);
      expect(await count2(db, pool)).toBe(again === slot ? 8 : 0);
      await take('second');
      expect(await count2(db, pool)).toBe(0);
    } finally {
      await db.query('rollback');
      await db.end();
    }
  });

  it('a probe claim expired more than a minute ago goes with the next claim; a live or recent one stays', async () => {
    const { o, pool } = backends.freshPostgres();
    const a = await backends.open(o, 'a');
    const plant = (endpoint: string, age: string) =>
      admin().query(
        `insert into coordination_probes (pool, endpoint_id, holder, expires_at) values ($1, $2, 'dead', now() - $3::interval)`,
        [pool, endpoint, age],
      );
    await plant('old-1', '5 minutes');
    await plant('old-2', '2 hours');
    await plant('recent', '10 seconds');
    await plant('live', '-1 minute');
    for (let i = 0; i < 10 && (await count('coordination_probes', pool, `endpoint_id like 'old-%'`)) > 0; i++)
      expect(await a.claimProbe(`e${i}`, 10_000)).toBe(true);
    expect(await count('coordination_probes', pool, `endpoint_id like 'old-%'`)).toBe(0);
    expect(await count('coordination_probes', pool, `endpoint_id in ('recent', 'live')`)).toBe(2);
    // The live claim is still another holder's; the recent expired one can be taken as before.
    expect(await a.claimProbe('live', 10_000)).toBe(false);
    expect(await a.claimProbe('recent', 10_000)).toBe(true);
  });
});

async function count2(db: pg.ClientBase, pool: string): Promise<number> {
  const r = await db.query<{ n: number }>(
    `select count(*)::int as n from coordination_rates where pool = $1 and rate_key = 'old@60000'`,
    [pool],
  );
  return r.rows[0]!.n;
}
