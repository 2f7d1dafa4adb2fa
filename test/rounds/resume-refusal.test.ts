import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_MACHINE_VERSION } from '../../machines/agent.machine.ts';
import { runScenario } from '../../src/runs/run-scenario.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { isSnapshotRestoreError } from '../../src/store/snapshot-restore-error.ts';
import { isHealthRestoreError } from '../../src/runs/run-restore.ts';

let database: BreakwaterDatabase;

beforeAll(async () => {
  database = await openDatabase({ dataDir: ':memory:' });
});
afterAll(async () => {
  await database.close();
});

const spec: ScenarioSpec = {
  name: 'refusal-drill',
  runtime: {
    endpoints: [
      {
        id: 'primary',
        provider: 'openai',
        model: 'gpt-4o',
        emulator: 'openai',
        apiKey: 'sk-refusal-0000000000000001',
      },
    ],
    chains: { main: ['primary'] },
  },
  agents: [
    { name: 'Kai', chain: 'main', memory: { desk: 'ops' } },
    { name: 'Yuna', chain: 'main' },
  ],
  rounds: {
    count: 3,
    items: [
      { id: 'I1', title: 'First' },
      { id: 'I2', title: 'Second' },
    ],
  },
  emulator: { seed: 8 },
};

/** Runs the scenario until round 1 is committed, then interrupts it. */
async function interruptedAfterRoundOne(runId: string): Promise<void> {
  const stop = new AbortController();
  await expect(
    runScenario({
      scenario: spec,
      runId,
      database,
      signal: stop.signal,
      onEvent: (e) => {
        if (e.type === 'round.committed') stop.abort();
      },
    }),
  ).rejects.toThrow();
}

async function tableCounts(runId: string) {
  const count = async (table: string) =>
    Number(
      (
        await sql<{
          n: string;
        }>`select count(*) as n from ${sql.table(table)} where run_id = ${runId}`.execute(database.db)
      ).rows[0]!.n,
    );
  const run = await createRunStore(database).getRun(runId);
  return {
    status: run?.status,
    currentRound: run?.currentRound,
    rounds: await count('rounds'),
    turns: await count('turns'),
    states: await count('agent_states'),
    calls: await count('call_results'),
    events: await count('events'),
  };
}

describe('resume refuses a run it cannot restore faithfully', () => {
  it('a corrupt state row stops the resume with an error naming run and agent, and changes nothing', async () => {
    const runId = `corrupt-${Date.now()}`;
    await interruptedAfterRoundOne(runId);
    const store = createRunStore(database);
    expect((await store.getRun(runId))?.currentRound).toBe(1);
    await sql`update agent_states set slots = ${JSON.stringify('not an object')}::jsonb where run_id = ${runId} and agent = 'Kai'`.execute(
      database.db,
    );
    const before = await tableCounts(runId);
    const error = await runScenario({ scenario: spec, runId, resume: true, database }).catch(
      (e: unknown) => e,
    );
    expect(isSnapshotRestoreError(error)).toBe(true);
    expect((error as Error).message).toContain(runId);
    expect((error as Error).message).toContain('Kai');
    expect(await tableCounts(runId)).toEqual(before);
  });

  it('a machine-version mismatch stops the resume the same way', async () => {
    const runId = `version-${Date.now()}`;
    await interruptedAfterRoundOne(runId);
    await sql`update agent_states set machine_version = 'agent@0' where run_id = ${runId} and agent = 'Yuna'`.execute(
      database.db,
    );
    const before = await tableCounts(runId);
    const error = await runScenario({ scenario: spec, runId, resume: true, database }).catch(
      (e: unknown) => e,
    );
    expect(isSnapshotRestoreError(error)).toBe(true);
    expect((error as Error).message).toMatch(/Yuna/);
    expect((error as Error).message).toMatch(new RegExp(AGENT_MACHINE_VERSION));
    expect(await tableCounts(runId)).toEqual(before);
  });

  it('corrupt endpoint health stops the resume the same way, naming the run', async () => {
    const runId = `health-${Date.now()}`;
    await interruptedAfterRoundOne(runId);
    await sql`update rounds set health = '{"primary": {"cooldownUntil": "soon"}}'::jsonb where run_id = ${runId}`.execute(
      database.db,
    );
    const before = await tableCounts(runId);
    const error = await runScenario({ scenario: spec, runId, resume: true, database }).catch(
      (e: unknown) => e,
    );
    expect(isHealthRestoreError(error)).toBe(true);
    expect((error as Error).message).toContain(runId);
    expect(await tableCounts(runId)).toEqual(before);
  });

  it('a run that fails before its first round is marked failed, with the reason', async () => {
    const runId = `early-${Date.now()}`;
    const error = await runScenario({
      scenario: spec,
      runId,
      database,
      // What a visualizer whose port is taken does: the start fails after the run row exists.
      onStart: () => {
        throw new Error('listen EADDRINUSE: address already in use 127.0.0.1:7070');
      },
    }).catch((e: unknown) => e);
    expect(String(error)).toContain('EADDRINUSE');
    const run = await createRunStore(database).getRun(runId);
    expect(run).toMatchObject({ status: 'failed', currentRound: 0 });
    expect(run?.failure).toContain('EADDRINUSE');
    expect(run?.finishedAt).not.toBeNull();
  });

  it('an intact interrupted run resumes from round 2 and completes', async () => {
    const runId = `intact-${Date.now()}`;
    await interruptedAfterRoundOne(runId);
    const result = await runScenario({ scenario: spec, runId, resume: true, database });
    expect(result.run.status).toBe('completed');
    const turns = await createRunStore(database).listTurns(runId);
    expect(turns).toHaveLength(3 * 2 * 2);
  });
});
