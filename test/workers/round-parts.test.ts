import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { isRoundCommitConflictError } from '../../src/store/round-commit-conflict-error.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import type { TurnInput } from '../../src/store/store-types.ts';
import pg from 'pg';
import {
  claimPart,
  loadParts,
  type PartClaim,
  PartsTakenOverError,
  rememberCallHeld,
  renewParts,
  stagePart,
} from '../../src/runs/workers/round-parts.ts';
import { perFileDatabase, postgresUrl } from '../support/coordination-env.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
perFileDatabase();

/*
 * The claim / stage / commit protocol of runs spread over workers, on the real PostgreSQL: leases are fenced by
 * their generation, and whatever the interleaving of workers claiming, losing their lease, staging and
 * committing, a round is committed once, with one turn per (item, agent).
 */

let database: BreakwaterDatabase;
beforeAll(async () => {
  database = await openDatabase({ url: postgresUrl() });
});
afterAll(async () => {
  await database.close();
});

const TTL = 60_000;

async function newRun(): Promise<string> {
  const runId = `parts-${randomUUID().slice(0, 8)}`;
  await createRunStore(database).createRun({
    runId,
    scenario: 'parts',
    totalRounds: 1,
    machineVersion: 'agent@test',
  });
  return runId;
}

/** Makes a part's lease have run out `seconds` ago (the database's clock decides expiry; no waiting). */
async function expire(runId: string, agent: string, seconds = 1): Promise<void> {
  await sql`update round_parts set expires_at = now() - make_interval(secs => ${seconds}) where run_id = ${runId} and agent = ${agent}`.execute(
    database.db,
  );
}

/** Holder's claim of Kai's part of round 1, taken over at once once its lease ran out. */
const claimKai = (runId: string, holder: string) =>
  claimPart(database, { runId, round: 1, agent: 'Kai', holder, ttlMs: TTL, takeoverAfterMs: 0 });

const turnsOf = (agent: string, items: readonly string[]): TurnInput[] =>
  items.map((itemId) => ({
    itemId,
    agent,
    prompt: { text: itemId },
    outcome: 'answered',
    answer: { text: `${agent} on ${itemId}` },
  }));

describe('round parts', () => {
  it('a memo write of a holder lands while it holds its parts, and is refused once another worker took one over', async () => {
    const runId = await newRun();
    const store = createRunStore(database);
    const claim = (agent: string, holder: string) =>
      claimPart(database, { runId, round: 1, agent, holder, ttlMs: TTL, takeoverAfterMs: 0 });
    const mine = [(await claim('Kai', 'A'))!, (await claim('Bo', 'A'))!];
    await rememberCallHeld(database, mine, `${runId}:1:I1:Kai:call0`, { text: 'held' });
    expect(await store.recallCall(`${runId}:1:I1:Kai:call0`)).toEqual({ text: 'held' });
    // One of A's parts taken over: A's writes, for either part, are refused and leave nothing behind.
    await expire(runId, 'Bo');
    expect((await claim('Bo', 'B'))?.generation).toBe(2);
    await expect(
      rememberCallHeld(database, mine, `${runId}:1:I2:Kai:call0`, { text: 'late' }),
    ).rejects.toBeInstanceOf(PartsTakenOverError);
    expect(await store.recallCall(`${runId}:1:I2:Kai:call0`)).toBeUndefined();
  });

  it("a memo write and a takeover are ordered: a write waiting on the claim's row lock is refused when the claim commits", async () => {
    const runId = await newRun();
    const store = createRunStore(database);
    const mine = [
      (await claimPart(database, {
        runId,
        round: 1,
        agent: 'Kai',
        holder: 'A',
        ttlMs: TTL,
        takeoverAfterMs: 0,
      }))!,
    ];
    await expire(runId, 'Kai');
    // B's takeover, inside a transaction left open: it holds the part's row lock.
    const b = new pg.Client({ connectionString: postgresUrl() });
    await b.connect();
    try {
      await b.query('begin');
      const { rowCount } = await b.query(
        `update round_parts set holder = 'B', generation = generation + 1, expires_at = now() + interval '1 minute'
         where run_id = $1 and round = 1 and agent = 'Kai' and not done and expires_at < now()`,
        [runId],
      );
      expect(rowCount).toBe(1);
      let settled = false;
      const write = rememberCallHeld(database, mine, `${runId}:1:I1:Kai:call0`, { text: 'racing' }).finally(
        () => {
          settled = true;
        },
      );
      write.catch(() => {});
      // The write waits for the claim (its FOR SHARE lock conflicts with the claim's row lock).
      await new Promise((r) => setTimeout(r, 300));
      expect(settled).toBe(false);
      await b.query('commit');
      await expect(write).rejects.toBeInstanceOf(PartsTakenOverError);
      expect(await store.recallCall(`${runId}:1:I1:Kai:call0`)).toBeUndefined();
    } finally {
      await b.end();
    }
  });

  it("a part whose lease ran out is taken over only takeoverAfterMs later (the old holder's memo writes land first)", async () => {
    const runId = await newRun();
    const claim = (holder: string) =>
      claimPart(database, { runId, round: 1, agent: 'Kai', holder, ttlMs: TTL, takeoverAfterMs: 60_000 });
    expect((await claim('A'))?.generation).toBe(1);
    // Ran out a second ago: within the minute, nobody takes it, not even its old holder (whose older memo
    // instance may still be writing).
    await expire(runId, 'Kai');
    expect(await claim('B')).toBeUndefined();
    expect(await claim('A')).toBeUndefined();
    // Ran out over a minute ago: taken over, fenced by the next generation.
    await expire(runId, 'Kai', 61);
    expect((await claim('B'))?.generation).toBe(2);
  });

  it('a lease taken over is fenced: the old holder cannot renew or stage, the new one can, once', async () => {
    const runId = await newRun();
    const a = (await claimKai(runId, 'A'))!;
    expect(a.generation).toBe(1);
    // A live holder keeps its part.
    expect(await claimKai(runId, 'B')).toBeUndefined();
    expect(await renewParts(database, [a], TTL)).toEqual([]);

    await expire(runId, 'Kai');
    const b = (await claimKai(runId, 'B'))!;
    expect(b.generation).toBe(2);
    expect(await renewParts(database, [a], TTL)).toEqual([a]);
    expect(await stagePart(database, a, turnsOf('Kai', ['I1']), null)).toBe(false);
    expect(await stagePart(database, b, turnsOf('Kai', ['I1']), null)).toBe(true);
    expect(await stagePart(database, b, turnsOf('Kai', ['I1']), null)).toBe(false);
    // A staged part is never claimed again, expired or not.
    await expire(runId, 'Kai');
    expect(await claimKai(runId, 'C')).toBeUndefined();
    const [part] = await loadParts(database, runId, 1);
    expect(part).toMatchObject({ agent: 'Kai', holder: 'B', generation: 2, done: true });
  });

  it('any interleaving of three workers claiming, losing leases, staging and committing commits the round once, one turn per (item, agent)', async () => {
    const AGENTS = ['Kai', 'Yuna', 'Miso'];
    const ITEMS = ['I1', 'I2'];
    const WORKERS = ['w1', 'w2', 'w3'];
    const op = fc.oneof(
      fc.record({
        kind: fc.constant('claim' as const),
        w: fc.constantFrom(...WORKERS),
        agent: fc.constantFrom(...AGENTS),
      }),
      fc.record({
        kind: fc.constant('expire' as const),
        w: fc.constant(''),
        agent: fc.constantFrom(...AGENTS),
      }),
      fc.record({
        kind: fc.constant('stage' as const),
        w: fc.constantFrom(...WORKERS),
        agent: fc.constantFrom(...AGENTS),
      }),
      fc.record({
        kind: fc.constant('commit' as const),
        w: fc.constantFrom(...WORKERS),
        agent: fc.constant(''),
      }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 40 }), async (ops) => {
        const runId = await newRun();
        const store = createRunStore(database);
        // What each worker believes it holds (it may have been taken over since).
        const held = new Map<string, PartClaim>();
        let commits = 0;
        const staged = new Map<string, PartClaim[]>();
        const tryCommit = async () => {
          const parts = await loadParts(database, runId, 1);
          if (parts.length < AGENTS.length || parts.some((p) => !p.done)) return;
          try {
            await store.commitRound({ runId, round: 1, turns: parts.flatMap((p) => p.turns ?? []) });
            commits++;
          } catch (e) {
            if (!(isRoundCommitConflictError(e) && e.reason === 'already_committed')) throw e;
          }
        };
        for (const o of [...ops, ...finish(AGENTS)]) {
          if (o.kind === 'claim') {
            const c = await claimPart(database, {
              runId,
              round: 1,
              agent: o.agent,
              holder: o.w,
              ttlMs: TTL,
              takeoverAfterMs: 0,
            });
            if (c) held.set(`${o.w}/${o.agent}`, c);
          } else if (o.kind === 'expire') {
            await expire(runId, o.agent);
          } else if (o.kind === 'stage') {
            const c = held.get(`${o.w}/${o.agent}`);
            if (c && (await stagePart(database, c, turnsOf(o.agent, ITEMS), null)))
              staged.set(o.agent, [...(staged.get(o.agent) ?? []), c]);
          } else {
            await tryCommit();
          }
        }
        const parts = await loadParts(database, runId, 1);
        // Each part was staged once, by the holder of its last generation.
        for (const p of parts) {
          expect(p.done).toBe(true);
          expect(staged.get(p.agent)).toEqual([
            { runId, round: 1, agent: p.agent, holder: p.holder, generation: p.generation },
          ]);
        }
        expect(commits).toBe(1);
        const run = await store.getRun(runId);
        expect(run?.currentRound).toBe(1);
        const { rows } = await sql<{ n: string; d: string }>`
          select count(*) as n, count(distinct (item_id, agent)) as d from turns where run_id = ${runId}
        `.execute(database.db);
        expect(Number(rows[0]!.n)).toBe(AGENTS.length * ITEMS.length);
        expect(Number(rows[0]!.d)).toBe(AGENTS.length * ITEMS.length);
      }),
      { seed: 20261215, numRuns: 100 },
    );
  }, 120_000);
});

/** After the random ops, every agent's part is taken (over) by w1 and staged, and w2 and w3 try to commit. */
function finish(agents: readonly string[]) {
  return [
    ...agents.flatMap((agent) => [
      { kind: 'expire' as const, w: '', agent },
      { kind: 'claim' as const, w: 'w1', agent },
      { kind: 'stage' as const, w: 'w1', agent },
    ]),
    { kind: 'commit' as const, w: 'w2', agent: '' },
    { kind: 'commit' as const, w: 'w3', agent: '' },
  ];
}
