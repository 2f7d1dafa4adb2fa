import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BreakwaterDatabase } from '../../src/store/open-database.ts';
import { type RunStore, createRunStore } from '../../src/store/run-store.ts';
import { isRoundCommitConflictError } from '../../src/store/round-commit-conflict-error.ts';
import { isStoreInputError } from '../../src/store/store-errors.ts';
import {
  BACKENDS,
  MACHINE_VERSION,
  deleteRuns,
  perFileDatabase,
  turn,
  uniqueId,
} from './store-test-support.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
perFileDatabase();

/*
 * Issue 42: a round's events are written by the statement that commits the round, so the log holds them exactly
 * when the round is committed — a refused or aborted commit writes none, a committed one never lacks them.
 */

describe.each(BACKENDS)('events committed with their round on $name', (backend) => {
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

  async function newRun(): Promise<string> {
    const runId = uniqueId('events');
    runIds.push(runId);
    await store.createRun({
      runId,
      scenario: 'events-test',
      totalRounds: 3,
      machineVersion: MACHINE_VERSION,
    });
    return runId;
  }
  const completed = (round: number, itemId: string) => ({
    at: 1_000 + round,
    type: 'turn.completed',
    agent: 'analyst',
    data: { round, itemId, outcome: 'answered' },
  });
  const commit = (runId: string, round: number) => ({
    runId,
    round,
    turns: [turn('I1', 'analyst', round), turn('I2', 'analyst', round)],
    events: [
      completed(round, 'I1'),
      completed(round, 'I2'),
      { at: 2_000 + round, type: 'round.committed', endpoint: null, data: { round, turns: 2 } },
    ],
  });

  it('writes the events in the commit, numbered after the run’s last; a refused commit writes none', async () => {
    const runId = await newRun();
    await store.appendRunEvents(runId, [{ at: 1, type: 'run.started', data: { runId } }]);
    await store.commitRound(commit(runId, 1));
    const again = await store.commitRound(commit(runId, 1)).catch((e: unknown) => e);
    expect(isRoundCommitConflictError(again)).toBe(true);
    const early = await store.commitRound(commit(runId, 3)).catch((e: unknown) => e);
    expect(isRoundCommitConflictError(early)).toBe(true);
    await store.commitRound(commit(runId, 2));
    const log = await store.readEvents(runId);
    expect(log.map((e) => [e.seq, e.type, (e.data as { round?: number }).round ?? null])).toEqual([
      [1, 'run.started', null],
      [2, 'turn.completed', 1],
      [3, 'turn.completed', 1],
      [4, 'round.committed', 1],
      [5, 'turn.completed', 2],
      [6, 'turn.completed', 2],
      [7, 'round.committed', 2],
    ]);
    expect(log[1]).toMatchObject({ agent: 'analyst', endpoint: null, at: 1_001 });
  });

  it('an aborted commit and a commit refused for a bad event leave neither round nor events', async () => {
    const runId = await newRun();
    const controller = new AbortController();
    controller.abort();
    await expect(store.commitRound(commit(runId, 1), { signal: controller.signal })).rejects.toThrow();
    const bad = commit(runId, 1);
    const refused = await store
      .commitRound({ ...bad, events: [...bad.events, { at: 5, type: '' }] })
      .catch((e: unknown) => e);
    expect(isStoreInputError(refused)).toBe(true);
    expect(String((refused as Error).message)).toContain('events[3].type');
    expect(await store.readEvents(runId)).toEqual([]);
    expect(await store.listRounds(runId)).toEqual([]);
  });
});
