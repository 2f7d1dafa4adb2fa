import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { assign, createActor, setup } from 'xstate';
import type { BreakwaterDatabase } from '../../src/store/open-database.ts';
import { type RunStore, createRunStore } from '../../src/store/run-store.ts';
import { type SnapshotRestoreError, isSnapshotRestoreError } from '../../src/store/snapshot-restore-error.ts';
import { isRunNotFoundError } from '../../src/store/store-errors.ts';
import {
  BACKENDS,
  perFileDatabase,
  MACHINE_VERSION,
  deleteRuns,
  footprint,
  state,
  turn,
  uniqueId,
} from './store-test-support.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
perFileDatabase();

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

describe.each(BACKENDS)('agent states on $name', (backend) => {
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

  /** A run where analyst's state changed in rounds 1 and 2, ops's only in round 1. */
  async function runWithStates(): Promise<string> {
    const runId = uniqueId('state');
    runIds.push(runId);
    await store.createRun({ runId, scenario: 'state-test', totalRounds: 3, machineVersion: MACHINE_VERSION });
    await store.commitRound({
      runId,
      round: 1,
      turns: [turn('i1', 'analyst', 1), turn('i1', 'ops', 1)],
      states: [state('analyst', 1), state('ops', 1)],
    });
    await store.commitRound({
      runId,
      round: 2,
      turns: [turn('i1', 'analyst', 2)],
      states: [state('analyst', 2), state('ops', 1)],
    });
    return runId;
  }

  async function restoreError(
    runId: string,
    machineVersion = MACHINE_VERSION,
  ): Promise<SnapshotRestoreError> {
    const error = await store.loadAgentStates(runId, { machineVersion }).catch((e: unknown) => e);
    expect(isSnapshotRestoreError(error), `expected SnapshotRestoreError, got ${String(error)}`).toBe(true);
    return error as SnapshotRestoreError;
  }

  async function stateRows(runId: string) {
    return database.db
      .selectFrom('agent_states')
      .selectAll()
      .where('run_id', '=', runId)
      .orderBy('agent')
      .execute();
  }

  it('keeps ONE row per agent, upserted only when it changed: its last round says when', async () => {
    const runId = await runWithStates();
    expect((await stateRows(runId)).map((r) => [r.agent, r.last_round])).toEqual([
      ['analyst', 2],
      ['ops', 1],
    ]);
    const byAgent = await store.loadAgentStates(runId, { machineVersion: MACHINE_VERSION });
    expect(Object.keys(byAgent).sort()).toEqual(['analyst', 'ops']);
    expect(byAgent.analyst).toMatchObject({
      runId,
      agent: 'analyst',
      lastRound: 2,
      machineVersion: MACHINE_VERSION,
    });
    expect(byAgent.analyst?.slots).toEqual({ lastRound: '2', notes: 'note 2' });
    expect(byAgent.ops).toMatchObject({
      lastRound: 1,
      toolResults: [{ tool: 'lookup', round: 1, output: { ok: true } }],
    });
  });

  it('numbers each agent’s turns in the order it finished them, across rounds (agentOrder, else position)', async () => {
    const runId = uniqueId('seq');
    runIds.push(runId);
    await store.createRun({ runId, scenario: 'seq', totalRounds: 2, machineVersion: MACHINE_VERSION });
    await store.commitRound({
      runId,
      round: 1,
      turns: [
        turn('a', 'analyst', 1, { agentOrder: 1 }),
        turn('b', 'analyst', 1, { agentOrder: 0 }),
        turn('a', 'ops', 1),
      ],
    });
    await store.commitRound({ runId, round: 2, turns: [turn('c', 'analyst', 2), turn('d', 'analyst', 2)] });
    const turns = await store.listTurns(runId);
    expect(turns.map((t) => [t.round, t.itemId, t.agent, t.agentSeq])).toEqual([
      [1, 'a', 'analyst', 2],
      [1, 'b', 'analyst', 1],
      [1, 'a', 'ops', 1],
      [2, 'c', 'analyst', 3],
      [2, 'd', 'analyst', 4],
    ]);
    const recent = await store.recentTurns(runId, { agents: ['analyst', 'ops', 'nobody'], limit: 3 });
    expect(recent.analyst?.map((t) => t.itemId)).toEqual(['a', 'c', 'd']);
    expect(recent.ops?.map((t) => t.itemId)).toEqual(['a']);
    expect(recent.nobody).toEqual([]);
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
      states: [{ agent: 'analyst', snapshot: persisted, slots: { topic: 'credit' }, toolResults: [] }],
    });
    const { analyst } = await store.loadAgentStates(runId, { machineVersion: MACHINE_VERSION });
    const restored = createActor(agentMachine, { snapshot: analyst?.snapshot as never }).start();
    expect(restored.getSnapshot().value).toBe('cooling');
    expect(restored.getSnapshot().context).toEqual({ turns: 1, coolingUntil: 1_786_000_000_000 });
    restored.send({ type: 'CALL' });
    expect(restored.getSnapshot().value).toBe('calling');
    restored.stop();
  });

  it('stops at a corrupt state row with an error naming run and agent, and changes nothing', async () => {
    const runId = await runWithStates();
    await sql`update agent_states set tool_results = ${JSON.stringify('oops')}::jsonb
              where run_id = ${runId} and agent = 'analyst'`.execute(database.db);
    const rowsBefore = await stateRows(runId);
    const before = await footprint(database, runId);

    const error = await restoreError(runId);
    expect(error.code).toBe('SNAPSHOT_INVALID');
    expect(error).toMatchObject({ runId, agent: 'analyst', round: 2, reason: 'corrupt' });
    expect(error.message).toContain(runId);
    expect(error.message).toContain('"analyst"');
    expect(error.message).toContain('toolResults');
    expect(error.message).toMatch(/start a new run/);

    expect(await stateRows(runId)).toEqual(rowsBefore);
    expect(await footprint(database, runId)).toEqual(before);
  });

  it('treats a state whose actor snapshot lost its status as corrupt', async () => {
    const runId = await runWithStates();
    await sql`update agent_states set snapshot = '"garbage"'::jsonb
              where run_id = ${runId} and agent = 'ops'`.execute(database.db);
    const error = await restoreError(runId);
    expect(error).toMatchObject({ agent: 'ops', round: 1, reason: 'corrupt' });
    expect(error.message).toContain('snapshot');
  });

  it('stops at a machine-version mismatch with an error naming run, agent and both versions', async () => {
    const runId = await runWithStates();
    const rowsBefore = await stateRows(runId);
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

    expect(await stateRows(runId)).toEqual(rowsBefore);
    expect(await footprint(database, runId)).toEqual(before);
  });

  it('checks the version stored with each state, not only the run’s', async () => {
    const runId = await runWithStates();
    await sql`update agent_states set machine_version = 'agent-machine@0'
              where run_id = ${runId} and agent = 'ops'`.execute(database.db);
    const error = await restoreError(runId);
    expect(error).toMatchObject({
      agent: 'ops',
      reason: 'machine_version_mismatch',
      storedVersion: 'agent-machine@0',
    });
  });

  it('uses the state’s own machine version when one is given at commit', async () => {
    const runId = uniqueId('statever');
    runIds.push(runId);
    await store.createRun({ runId, scenario: 'v', totalRounds: 1, machineVersion: MACHINE_VERSION });
    await store.commitRound({
      runId,
      round: 1,
      turns: [],
      states: [{ ...state('analyst', 1), machineVersion: 'agent-machine@9' }],
    });
    const byAgent = await store.loadAgentStates(runId, { machineVersion: 'agent-machine@9' });
    expect(byAgent.analyst?.machineVersion).toBe('agent-machine@9');
  });

  it('keeps the endpoints’ health with each round; lastHealth reads the last round’s', async () => {
    const runId = uniqueId('health');
    runIds.push(runId);
    await store.createRun({ runId, scenario: 'h', totalRounds: 2, machineVersion: MACHINE_VERSION });
    expect(await store.lastHealth(runId)).toBeUndefined();
    await store.commitRound({ runId, round: 1, turns: [], health: { primary: { disabledUntil: 1 } } });
    await store.commitRound({ runId, round: 2, turns: [], health: { primary: { disabledUntil: 2 } } });
    expect(await store.lastHealth(runId)).toEqual({ primary: { disabledUntil: 2 } });
    expect((await store.listRounds(runId)).map((r) => r.health)).toEqual([
      { primary: { disabledUntil: 1 } },
      { primary: { disabledUntil: 2 } },
    ]);
  });

  it('returns nothing for a run without states and refuses an unknown run', async () => {
    const runId = uniqueId('nostate');
    runIds.push(runId);
    await store.createRun({ runId, scenario: 'n', totalRounds: 1, machineVersion: MACHINE_VERSION });
    expect(await store.loadAgentStates(runId, { machineVersion: MACHINE_VERSION })).toEqual({});
    const error = await store
      .loadAgentStates(uniqueId('ghost'), { machineVersion: MACHINE_VERSION })
      .catch((e: unknown) => e);
    expect(isRunNotFoundError(error)).toBe(true);
  });
});
