import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runScenario } from '../../src/runs/run-scenario.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { isRunLeaseHeldError } from '../../src/store/run-lease.ts';
import { perFileDatabase, postgresUrl } from '../store/store-test-support.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
perFileDatabase();

/*
 * One process drives a run at a time: a resume takes the run's lease (a compare-and-set on the runs row, renewed
 * by a heartbeat); a second resume while it is held refuses with one line naming the holder, and changes nothing;
 * a holder that died stops renewing and its lease expires. On both backends (two pools on the server: two
 * "processes"; one PGlite instance shared in-process).
 */

const spec: ScenarioSpec = {
  name: 'lease-drill',
  runtime: {
    endpoints: [
      {
        id: 'primary',
        provider: 'openai',
        model: 'gpt-4o',
        emulator: 'openai',
        apiKey: 'sk-lease-0000000000000001',
      },
    ],
    chains: { main: ['primary'] },
  },
  agents: [
    { name: 'Kai', chain: 'main' },
    { name: 'Yuna', chain: 'main' },
  ],
  rounds: {
    count: 3,
    items: [
      { id: 'I1', title: 'First' },
      { id: 'I2', title: 'Second' },
    ],
  },
  emulator: { seed: 9 },
};

interface Backend {
  readonly name: string;
  open(): Promise<[BreakwaterDatabase, BreakwaterDatabase, () => Promise<void>]>;
}

const BACKENDS: Backend[] = [
  {
    name: 'postgres',
    open: async () => {
      const a = await openDatabase({ url: postgresUrl() });
      const b = await openDatabase({ url: postgresUrl() });
      return [a, b, async () => void (await Promise.all([a.close(), b.close()]))];
    },
  },
  {
    name: 'pglite',
    open: async () => {
      const a = await openDatabase({ dataDir: ':memory:' });
      return [a, a, () => a.close()];
    },
  },
];

describe.each(BACKENDS)('the run lease on $name', (backend) => {
  let one: BreakwaterDatabase;
  let two: BreakwaterDatabase;
  let close: () => Promise<void>;
  const runIds: string[] = [];
  beforeAll(async () => {
    [one, two, close] = await backend.open();
  });
  afterAll(async () => {
    if (runIds.length > 0) {
      await one.db.deleteFrom('events').where('run_id', 'in', runIds).execute();
      await one.db.deleteFrom('call_results').where('run_id', 'in', runIds).execute();
      await one.db.deleteFrom('runs').where('run_id', 'in', runIds).execute();
    }
    await close();
  });

  async function interrupted(tag: string): Promise<string> {
    const runId = `lease-${tag}-${backend.name}-${Date.now()}`;
    runIds.push(runId);
    const stop = new AbortController();
    await runScenario({
      scenario: spec,
      runId,
      database: one,
      signal: stop.signal,
      onEvent: (e) => {
        if (e.type === 'round.committed') stop.abort();
      },
    }).catch(() => {});
    expect((await createRunStore(one).getRun(runId))?.status).toBe('interrupted');
    return runId;
  }

  async function duplicateSeqs(runId: string): Promise<number> {
    const { rows } = await sql<{ n: string | number }>`
      select count(*) as n from (select seq from events where run_id = ${runId} group by seq having count(*) > 1) d`.execute(
      one.db,
    );
    return Number(rows[0]?.n);
  }

  it('two resumes at once: one drives the run to the end, the other refuses naming the holder; event seqs stay unique', async () => {
    const runId = await interrupted('race');
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
      setTimeout(resolve, 15_000).unref();
    });
    const holders: string[] = [];
    // Whichever gets the lease waits at its start until the other has settled: the two really overlap.
    const resume = (database: BreakwaterDatabase) =>
      runScenario({
        scenario: spec,
        runId,
        resume: true,
        database,
        onStart: async () => {
          const row = await one.db
            .selectFrom('runs')
            .select('lease_holder')
            .where('run_id', '=', runId)
            .executeTakeFirst();
          holders.push(String(row?.lease_holder));
          await gate;
        },
      });
    const results = await Promise.allSettled([resume(one).finally(release), resume(two).finally(release)]);
    const won = results.filter((r) => r.status === 'fulfilled');
    const lost = results.filter((r): r is PromiseRejectedResult => r.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(isRunLeaseHeldError(lost[0]!.reason)).toBe(true);
    expect(holders).toHaveLength(1);
    expect(String(lost[0]!.reason.message)).toContain(holders[0]!);
    expect(String(lost[0]!.reason.message).split('\n')).toHaveLength(1);

    const store = createRunStore(one);
    const run = await store.getRun(runId);
    expect(run).toMatchObject({ status: 'completed', currentRound: 3 });
    expect(await store.listTurns(runId)).toHaveLength(3 * 2 * 2);
    expect(await duplicateSeqs(runId)).toBe(0);
    const started = await one.db
      .selectFrom('events')
      .select('seq')
      .where('run_id', '=', runId)
      .where('type', '=', 'run.started')
      .execute();
    expect(started).toHaveLength(2); // the first run and the one resume that proceeded
    // The lease is given back at the end.
    expect(
      await one.db
        .selectFrom('runs')
        .select(['lease_holder', 'lease_expires_at'])
        .where('run_id', '=', runId)
        .executeTakeFirst(),
    ).toEqual({ lease_holder: null, lease_expires_at: null });
  });

  it('a live holder’s lease refuses a resume and changes nothing; a dead holder’s expired lease is taken over', async () => {
    const runId = await interrupted('ghost');
    const store = createRunStore(one);
    await sql`update runs set lease_holder = 'ghost-host:4242:live', lease_expires_at = now() + interval '60 seconds'
              where run_id = ${runId}`.execute(one.db);
    const before = await store.getRun(runId);
    const refused = await runScenario({ scenario: spec, runId, resume: true, database: two }).catch(
      (e: unknown) => e,
    );
    expect(isRunLeaseHeldError(refused)).toBe(true);
    expect((refused as Error).message).toContain('ghost-host:4242:live');
    expect(await store.getRun(runId)).toEqual(before);
    expect(await store.listTurns(runId)).toHaveLength(2 * 2);

    // The holder died: it stopped renewing, and its lease ran out 5 s ago.
    await sql`update runs set lease_holder = 'ghost-host:4242:dead', lease_expires_at = now() - interval '5 seconds'
              where run_id = ${runId}`.execute(one.db);
    const result = await runScenario({ scenario: spec, runId, resume: true, database: two });
    expect(result.run).toMatchObject({ status: 'completed', currentRound: 3 });
    expect(await duplicateSeqs(runId)).toBe(0);
  });
});
