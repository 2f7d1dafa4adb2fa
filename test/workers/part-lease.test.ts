import { randomUUID } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { holdParts } from '../../src/runs/workers/part-lease.ts';
import { claimPart, type PartClaim } from '../../src/runs/workers/round-parts.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { perFileDatabase, postgresUrl } from '../support/coordination-env.ts';
import { waitFor } from '../support/wait-for.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
perFileDatabase();

/*
 * holdParts, the heartbeat a worker keeps its claimed parts by (src/runs/workers/part-lease.ts), on the real
 * PostgreSQL: it renews what it holds, stops renewing a part once released, and aborts `lost` when a part was taken
 * over or when it could not renew before the lease may have run out (never sooner, by its own monotonic clock).
 */

let database: BreakwaterDatabase;
beforeAll(async () => {
  database = await openDatabase({ url: postgresUrl() });
});
afterAll(async () => {
  await database.close();
});

async function claimBoth(ttlMs: number): Promise<{ runId: string; claims: PartClaim[]; leaseFrom: number }> {
  const runId = `lease-${randomUUID().slice(0, 8)}`;
  await createRunStore(database).createRun({
    runId,
    scenario: 'lease',
    totalRounds: 1,
    machineVersion: 'agent@test',
  });
  const leaseFrom = performance.now();
  const claims: PartClaim[] = [];
  for (const agent of ['Kai', 'Bo']) {
    const claim = await claimPart(database, {
      runId,
      round: 1,
      agent,
      holder: 'A',
      ttlMs,
      takeoverAfterMs: 0,
    });
    claims.push(claim!);
  }
  return { runId, claims, leaseFrom };
}

/** A part's lease expiry, as the database holds it (ms since the epoch). */
async function expiryOf(runId: string, agent: string): Promise<number> {
  const row = await database.db
    .selectFrom('round_parts')
    .select('expires_at')
    .where('run_id', '=', runId)
    .where('agent', '=', agent)
    .executeTakeFirstOrThrow();
  return new Date(row.expires_at as unknown as string).getTime();
}

describe('holdParts', () => {
  it('renews the parts it holds; a released part is renewed no more', async () => {
    const ttl = 3_000;
    const { runId, claims, leaseFrom } = await claimBoth(ttl);
    const [kai0, bo0] = [await expiryOf(runId, 'Kai'), await expiryOf(runId, 'Bo')];
    const held = holdParts(database, claims, ttl, leaseFrom);
    try {
      held.release(claims[1]!);
      // Two renewals of Kai's part at least (one every third of the TTL).
      let kai = kai0;
      for (let i = 0; i < 200 && kai <= kai0 + ttl / 3; i++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        kai = await expiryOf(runId, 'Kai');
      }
      expect(kai, "Kai's lease renewed twice within 20 s").toBeGreaterThan(kai0 + ttl / 3);
      expect(await expiryOf(runId, 'Bo')).toBe(bo0);
      expect(held.lost.aborted).toBe(false);
    } finally {
      held.stop();
    }
  });

  it('aborts `lost` naming the part once another worker took it over', async () => {
    const ttl = 3_000;
    const { runId, claims, leaseFrom } = await claimBoth(ttl);
    const held = holdParts(database, claims, ttl, leaseFrom);
    try {
      await sql`update round_parts set expires_at = now() - interval '1 second' where run_id = ${runId} and agent = 'Kai'`.execute(
        database.db,
      );
      const taken = await claimPart(database, {
        runId,
        round: 1,
        agent: 'Kai',
        holder: 'B',
        ttlMs: 60_000,
        takeoverAfterMs: 0,
      });
      expect(taken?.holder).toBe('B');
      await waitFor(() => held.lost.aborted, 'the holder sees its part taken over');
      expect(String(held.lost.reason)).toContain('parts taken over: Kai');
    } finally {
      held.stop();
    }
  });

  it('aborts `lost` once it could not renew before the lease may have run out, and not before', async () => {
    const ttl = 600;
    const { claims } = await claimBoth(60_000);
    // A database the heartbeat cannot reach: every renewal fails.
    const gone = await openDatabase({ url: postgresUrl() });
    await gone.close();
    const leaseFrom = performance.now();
    const held = holdParts(gone, claims, ttl, leaseFrom);
    try {
      let abortedAt = 0;
      held.lost.addEventListener('abort', () => {
        abortedAt = performance.now();
      });
      await waitFor(() => held.lost.aborted, 'the holder gives its parts up');
      expect(String(held.lost.reason)).toContain('could not be renewed before their lease ran out');
      expect(abortedAt - leaseFrom).toBeGreaterThanOrEqual(ttl);
    } finally {
      held.stop();
    }
  });
});
