import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assign, createActor, setup } from 'xstate';
import {
  type BreakwaterDatabase,
  type RunStore,
  type SnapshotRestoreError,
  createRunStore,
  isRunNotFoundError,
  isSnapshotRestoreError,
} from '../../src/store/index.ts';
import {
  BACKENDS,
  MACHINE_VERSION,
  deleteRuns,
  footprint,
  snapshot,
  turn,
  uniqueId,
} from './store-test-support.ts';

/** A tiny agent-like machine: deadlines live in context, as DESIGN.md asks. */
const agentMachine = setup({
  types: {
    context: {} as { turns: number; coolingUntil: number | null },
    events: {} as { type: 'CALL' } | { type: 'RATE_LIMITED'; until: number } | { type: 'DONE' },
  },
}).createMachine({
  id: 'agent',
  initial: 'idle',
  context: { turns: 0, coolingUntil: null },
  states: {
    idle: { on: { CALL: 'calling' } },
    calling: {
      on: {
        RATE_LIMITED: { target: 'cooling', actions: assign({ coolingUntil: ({ event }) => event.until }) },
        DONE: { target: 'idle', actions: assign({ turns: ({ context }) => context.turns + 1 }) },
      },
    },
    cooling: { on: { CALL: 'calling' } },
  },
});

describe.each(BACKENDS)('loadLatestSnapshots on $name', (backend) => {
  let database: BreakwaterDatabase;
  let store: RunStore;
  const runIds: string[] = [];

  beforeAll(async () => {
    database = await backend.open();
    store = createRunStore(database);
  });
  afterAll(async () => {
    await deleteRuns(database, runIds);
    await database?.close();
  });

  /** A run where analyst has snapshots in rounds 1 and 2, ops only in round 1. */
  async function runWithSnapshots(): Promise<string> {
    const runId = uniqueId('snap');
    runIds.push(runId);
    await store.createRun({ runId, scenario: 'snap-test', totalRounds: 3, machineVersion: MACHINE_VERSION });
    await store.commitRound({
      runId,
      round: 1,
      turns: [turn('i1', 'analyst', 1), turn('i1', 'ops', 1)],
      snapshots: [snapshot('analyst', 1), snapshot('ops', 1)],
    });
    await store.commitRound({
      runId,
      round: 2,
      turns: [turn('i1', 'analyst', 2)],
      snapshots: [snapshot('analyst', 2)],
    });
    return runId;
  }

  async function restoreError(
    runId: string,
    machineVersion = MACHINE_VERSION,
  ): Promise<SnapshotRestoreError> {
    const error = await store.loadLatestSnapshots(runId, { machineVersion }).catch((e: unknown) => e);
    expect(isSnapshotRestoreError(error), `expected SnapshotRestoreError, got ${String(error)}`).toBe(true);
    return error as SnapshotRestoreError;
  }

  async function storedSnapshotRows(runId: string) {
    return database.db
      .selectFrom('agent_snapshots')
      .selectAll()
      .where('run_id', '=', runId)
      .orderBy('agent')
      .orderBy('round')
      .execute();
  }

  it('returns each agent’s snapshot from the latest round it committed one in', async () => {
    const runId = await runWithSnapshots();
    const byAgent = await store.loadLatestSnapshots(runId, { machineVersion: MACHINE_VERSION });
    expect(Object.keys(byAgent).sort()).toEqual(['analyst', 'ops']);
    expect(byAgent.analyst).toMatchObject({
      runId,
      agent: 'analyst',
      round: 2,
      machineVersion: MACHINE_VERSION,
    });
    expect(byAgent.analyst?.data.memory).toEqual({ lastRound: 2, notes: ['note 2'] });
    expect(byAgent.ops).toMatchObject({ round: 1, data: { utterances: ['ops said something in round 1'] } });
  });

  it('restores a real XState persisted snapshot into an actor in the same state', async () => {
    const runId = uniqueId('xstate');
    runIds.push(runId);
    await store.createRun({ runId, scenario: 'xstate', totalRounds: 1, machineVersion: MACHINE_VERSION });
    const actor = createActor(agentMachine).start();
    actor.send({ type: 'CALL' });
    actor.send({ type: 'DONE' });
    actor.send({ type: 'CALL' });
    actor.send({ type: 'RATE_LIMITED', until: 1_786_000_000_000 });
    const persisted = actor.getPersistedSnapshot();
    actor.stop();

    await store.commitRound({
      runId,
      round: 1,
      turns: [],
      snapshots: [
        {
          agent: 'analyst',
          data: {
            utterances: ['hello'],
            memory: { topic: 'credit' },
            toolResults: [],
            actorSnapshot: persisted,
          },
        },
      ],
    });
    const { analyst } = await store.loadLatestSnapshots(runId, { machineVersion: MACHINE_VERSION });
    const restored = createActor(agentMachine, { snapshot: analyst?.data.actorSnapshot as never }).start();
    expect(restored.getSnapshot().value).toBe('cooling');
    expect(restored.getSnapshot().context).toEqual({ turns: 1, coolingUntil: 1_786_000_000_000 });
    restored.send({ type: 'CALL' });
    expect(restored.getSnapshot().value).toBe('calling');
    restored.stop();
  });

  it('stops at a corrupt snapshot row with an error naming run and agent, and changes nothing', async () => {
    const runId = await runWithSnapshots();
    await sql`update agent_snapshots set data = ${JSON.stringify({ utterances: 'oops', memory: {} })}::jsonb
              where run_id = ${runId} and agent = 'analyst' and round = 2`.execute(database.db);
    const rowsBefore = await storedSnapshotRows(runId);
    const before = await footprint(database, runId);

    const error = await restoreError(runId);
    expect(error.code).toBe('SNAPSHOT_INVALID');
    expect(error).toMatchObject({ runId, agent: 'analyst', round: 2, reason: 'corrupt' });
    expect(error.message).toContain(runId);
    expect(error.message).toContain('"analyst"');
    expect(error.message).toContain('utterances');
    expect(error.message).toMatch(/start a new run/);

    expect(await storedSnapshotRows(runId)).toEqual(rowsBefore);
    expect(await footprint(database, runId)).toEqual(before);
  });

  it('treats a snapshot whose actor snapshot lost its status as corrupt', async () => {
    const runId = await runWithSnapshots();
    await sql`update agent_snapshots set data = jsonb_set(data, '{actorSnapshot}', '"garbage"'::jsonb)
              where run_id = ${runId} and agent = 'ops'`.execute(database.db);
    const error = await restoreError(runId);
    expect(error).toMatchObject({ agent: 'ops', round: 1, reason: 'corrupt' });
    expect(error.message).toContain('actorSnapshot');
  });

  it('stops at a machine-version mismatch with an error naming run, agent and both versions', async () => {
    const runId = await runWithSnapshots();
    const rowsBefore = await storedSnapshotRows(runId);
    const before = await footprint(database, runId);

    const error = await restoreError(runId, 'agent-machine@2');
    expect(error).toMatchObject({
      runId,
      agent: 'analyst',
      reason: 'machine_version_mismatch',
      storedVersion: MACHINE_VERSION,
      expectedVersion: 'agent-machine@2',
    });
    expect(error.message).toContain(runId);
    expect(error.message).toContain('agent-machine@2');
    expect(error.message).toContain(MACHINE_VERSION);

    expect(await storedSnapshotRows(runId)).toEqual(rowsBefore);
    expect(await footprint(database, runId)).toEqual(before);
  });

  it('checks the version stored with each snapshot, not only the run’s', async () => {
    const runId = await runWithSnapshots();
    await sql`update agent_snapshots set machine_version = 'agent-machine@0'
              where run_id = ${runId} and agent = 'ops'`.execute(database.db);
    const error = await restoreError(runId);
    expect(error).toMatchObject({
      agent: 'ops',
      reason: 'machine_version_mismatch',
      storedVersion: 'agent-machine@0',
    });
  });

  it('uses the snapshot’s own machine version when one is given at commit', async () => {
    const runId = uniqueId('snapver');
    runIds.push(runId);
    await store.createRun({ runId, scenario: 'v', totalRounds: 1, machineVersion: MACHINE_VERSION });
    await store.commitRound({
      runId,
      round: 1,
      turns: [],
      snapshots: [{ ...snapshot('analyst', 1), machineVersion: 'agent-machine@9' }],
    });
    const byAgent = await store.loadLatestSnapshots(runId, { machineVersion: 'agent-machine@9' });
    expect(byAgent.analyst?.machineVersion).toBe('agent-machine@9');
  });

  it('returns nothing for a run without snapshots and refuses an unknown run', async () => {
    const runId = uniqueId('nosnap');
    runIds.push(runId);
    await store.createRun({ runId, scenario: 'n', totalRounds: 1, machineVersion: MACHINE_VERSION });
    expect(await store.loadLatestSnapshots(runId, { machineVersion: MACHINE_VERSION })).toEqual({});
    const error = await store
      .loadLatestSnapshots(uniqueId('ghost'), { machineVersion: MACHINE_VERSION })
      .catch((e: unknown) => e);
    expect(isRunNotFoundError(error)).toBe(true);
  });
});
