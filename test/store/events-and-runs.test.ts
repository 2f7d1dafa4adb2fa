import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import type { BreakwaterDatabase } from '../../src/store/open-database.ts';
import type { EventInput } from '../../src/store/store-types.ts';
import { type RunStore, createRunStore } from '../../src/store/run-store.ts';
import { isRunExistsError, isRunNotFoundError, isStoreInputError } from '../../src/store/store-errors.ts';
import { BACKENDS, perFileDatabase, MACHINE_VERSION, deleteRuns, uniqueId } from './store-test-support.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
perFileDatabase();

const T0 = Date.parse('2026-08-17T07:00:00.000Z');

describe.each(BACKENDS)('runs and events on $name', (backend) => {
  let database: BreakwaterDatabase;
  let store: RunStore;
  const clock = createManualClock(T0);
  const runIds: string[] = [];

  beforeAll(async () => {
    database = await backend.open();
    store = createRunStore(database, { clock });
  });
  afterAll(async () => {
    await deleteRuns(database, runIds);
    await database?.close();
  });

  function newRunId(prefix = 'run'): string {
    const runId = uniqueId(prefix);
    runIds.push(runId);
    return runId;
  }

  describe('runs', () => {
    it('creates a run with the injected clock’s time and reads it back', async () => {
      const runId = newRunId();
      const config = { concurrency: 3, chains: { premium: ['primary-anthropic', 'backup-openai'] } };
      const created = await store.createRun({
        runId,
        scenario: 'monday-briefing',
        config,
        totalRounds: 3,
        machineVersion: MACHINE_VERSION,
      });
      expect(created).toEqual({
        runId,
        scenario: 'monday-briefing',
        config,
        status: 'running',
        currentRound: 0,
        totalRounds: 3,
        machineVersion: MACHINE_VERSION,
        createdAt: clock.now(),
        updatedAt: clock.now(),
        finishedAt: null,
        failure: null,
      });
      expect(await store.getRun(runId)).toEqual(created);
      expect(await store.getRun(uniqueId('ghost'))).toBeUndefined();
    });

    it('refuses a run id that is taken', async () => {
      const runId = newRunId();
      await store.createRun({ runId, scenario: 'a', totalRounds: 1, machineVersion: MACHINE_VERSION });
      const error = await store
        .createRun({ runId, scenario: 'b', totalRounds: 9, machineVersion: MACHINE_VERSION })
        .catch((e: unknown) => e);
      expect(isRunExistsError(error)).toBe(true);
      expect((await store.getRun(runId))?.scenario).toBe('a');
    });

    it('moves a run through its statuses; finishedAt marks completed/failed only', async () => {
      const runId = newRunId();
      await store.createRun({ runId, scenario: 's', totalRounds: 2, machineVersion: MACHINE_VERSION });
      clock.advance(60_000);
      const interrupted = await store.setRunStatus(runId, 'interrupted');
      expect(interrupted).toMatchObject({ status: 'interrupted', finishedAt: null, updatedAt: clock.now() });
      clock.advance(60_000);
      const resumed = await store.setRunStatus(runId, 'running');
      expect(resumed.status).toBe('running');
      clock.advance(60_000);
      const done = await store.setRunStatus(runId, 'completed');
      expect(done).toMatchObject({ status: 'completed', finishedAt: clock.now() });
      expect(done.createdAt).toBeLessThan(done.finishedAt!);
      expect(done.failure).toBeNull();
      const failed = await store.setRunStatus(runId, 'failed', { failure: 'OPENAI_API_KEY is not set' });
      expect(failed).toMatchObject({ status: 'failed', failure: 'OPENAI_API_KEY is not set' });
      // The reason belongs to the failure: a later status clears it.
      expect((await store.setRunStatus(runId, 'completed')).failure).toBeNull();

      expect(
        isRunNotFoundError(await store.setRunStatus(uniqueId('ghost'), 'failed').catch((e: unknown) => e)),
      ).toBe(true);
      const badStatus = await store.setRunStatus(runId, 'paused' as never).catch((e: unknown) => e);
      expect(isStoreInputError(badStatus)).toBe(true);
      expect((await store.getRun(runId))?.status).toBe('completed');
    });

    it('lists runs newest first, filtered by status and limited', async () => {
      const older = newRunId('list');
      const newer = newRunId('list');
      clock.advance(1_000);
      await store.createRun({ runId: older, scenario: 'l', totalRounds: 1, machineVersion: MACHINE_VERSION });
      clock.advance(1_000);
      await store.createRun({ runId: newer, scenario: 'l', totalRounds: 1, machineVersion: MACHINE_VERSION });
      await store.setRunStatus(older, 'failed');

      const all = (await store.listRuns()).map((r) => r.runId);
      expect(all.indexOf(newer)).toBeLessThan(all.indexOf(older));
      const failed = (await store.listRuns({ status: 'failed' })).map((r) => r.runId);
      expect(failed).toContain(older);
      expect(failed).not.toContain(newer);
      expect(await store.listRuns({ limit: 1 })).toHaveLength(1);
    });

    it('refuses bad input with the field named', async () => {
      const error = await store
        .createRun({ runId: newRunId(), scenario: 's', totalRounds: -1, machineVersion: MACHINE_VERSION })
        .catch((e: unknown) => e);
      expect(isStoreInputError(error)).toBe(true);
      expect(String(error)).toContain('totalRounds');
    });
  });

  describe('events', () => {
    const event = (seq: number, extra: Partial<EventInput> = {}): EventInput => ({
      seq,
      at: T0 + seq * 100,
      type: seq % 2 === 0 ? 'CALL_SUCCEEDED' : 'CALL_FAILED',
      agent: 'analyst',
      endpoint: 'primary-anthropic',
      data: { seq },
      ...extra,
    });

    it('appends and reads back in seq order with every field', async () => {
      const runId = newRunId('events');
      await store.appendEvents(runId, [
        event(3),
        event(1, { agent: null, endpoint: null }),
        event(2, { data: undefined }),
      ]);
      await store.appendEvents(runId, [event(4)]);
      const read = await store.readEvents(runId);
      expect(read.map((e) => e.seq)).toEqual([1, 2, 3, 4]);
      expect(read[0]).toMatchObject({
        runId,
        seq: 1,
        at: T0 + 100,
        type: 'CALL_FAILED',
        agent: null,
        endpoint: null,
        data: { seq: 1 },
      });
      expect(read[1]).toMatchObject({
        seq: 2,
        type: 'CALL_SUCCEEDED',
        agent: 'analyst',
        endpoint: 'primary-anthropic',
        data: {},
      });
      expect(typeof read[0]!.id).toBe('number');
      expect(typeof read[0]!.at).toBe('number');
    });

    it('keeps runs apart and filters by seq, time and limit', async () => {
      const runId = newRunId('events');
      const other = newRunId('events');
      await store.appendEvents(
        runId,
        Array.from({ length: 10 }, (_, i) => event(i + 1)),
      );
      await store.appendEvents(other, [event(1), event(2)]);

      expect((await store.readEvents(other)).map((e) => e.seq)).toEqual([1, 2]);
      expect((await store.readEvents(runId, { afterSeq: 7 })).map((e) => e.seq)).toEqual([8, 9, 10]);
      expect((await store.readEvents(runId, { untilAt: T0 + 300 })).map((e) => e.seq)).toEqual([1, 2, 3]);
      expect(
        (await store.readEvents(runId, { afterSeq: 2, untilAt: T0 + 600, limit: 2 })).map((e) => e.seq),
      ).toEqual([3, 4]);
      expect(await store.readEvents(runId, { afterSeq: 10 })).toEqual([]);
    });

    it('keeps insertion order for events that share a seq', async () => {
      const runId = newRunId('events');
      await store.appendEvents(runId, [event(5, { type: 'first' }), event(5, { type: 'second' })]);
      await store.appendEvents(runId, [event(5, { type: 'third' })]);
      expect((await store.readEvents(runId)).map((e) => e.type)).toEqual(['first', 'second', 'third']);
    });

    it('appends a batch larger than one insert statement', async () => {
      const runId = newRunId('events');
      await store.appendEvents(
        runId,
        Array.from({ length: 4_500 }, (_, i) => event(i + 1)),
      );
      const read = await store.readEvents(runId, { afterSeq: 4_495 });
      expect(read.map((e) => e.seq)).toEqual([4_496, 4_497, 4_498, 4_499, 4_500]);
      expect(await store.readEvents(runId)).toHaveLength(4_500);
    });

    it('refuses an event without an integer seq, writing none of the batch', async () => {
      const runId = newRunId('events');
      const error = await store.appendEvents(runId, [event(1), event(1.5)]).catch((e: unknown) => e);
      expect(isStoreInputError(error)).toBe(true);
      expect(String(error)).toContain('events[1].seq');
      expect(await store.readEvents(runId)).toEqual([]);
      await store.appendEvents(runId, []);
      expect(await store.readEvents(runId)).toEqual([]);
    });
  });
});
