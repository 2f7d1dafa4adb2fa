import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BreakwaterDatabase } from '../../src/store/open-database.ts';
import {
  type RoundCommitConflictError,
  isRoundCommitConflictError,
} from '../../src/store/round-commit-conflict-error.ts';
import { type RunStore, createRunStore } from '../../src/store/run-store.ts';
import { isStoreInputError } from '../../src/store/store-errors.ts';
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

describe.each(BACKENDS)('commitRound on $name', (backend) => {
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

  async function newRun(totalRounds = 5): Promise<string> {
    const runId = uniqueId('commit');
    runIds.push(runId);
    await store.createRun({ runId, scenario: 'commit-test', totalRounds, machineVersion: MACHINE_VERSION });
    return runId;
  }

  function roundInput(runId: string, round: number, tag = '') {
    return {
      runId,
      round,
      turns: [
        turn('agenda-1', 'analyst', round, { answer: { text: `analyst r${round}${tag}` } }),
        turn('agenda-1', 'ops', round, {
          outcome: 'no_agent' as const,
          idempotencyKey: null,
          endpointId: null,
        }),
        turn('agenda-2', 'analyst', round, { answer: { text: `analyst item2 r${round}${tag}` } }),
      ],
      states: [state('analyst', round), state('ops', round)],
      summary: { round, tag },
    };
  }

  async function conflictOf(p: Promise<unknown>): Promise<RoundCommitConflictError> {
    const error = await p.then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isRoundCommitConflictError(error), `expected a conflict, got ${String(error)}`).toBe(true);
    return error as RoundCommitConflictError;
  }

  it('commits rounds in order, advancing current_round and storing turns, agent states and summary', async () => {
    const runId = await newRun();
    const first = await store.commitRound(roundInput(runId, 1));
    expect(first).toMatchObject({ runId, round: 1, summary: { round: 1, tag: '' } });
    await store.commitRound(roundInput(runId, 2));

    expect((await store.getRun(runId))?.currentRound).toBe(2);
    expect(await footprint(database, runId)).toEqual({ rounds: 2, turns: 6, states: 2, currentRound: 2 });

    const round2 = await store.listTurns(runId, { round: 2 });
    expect(round2.map((t) => [t.position, t.itemId, t.agent, t.outcome])).toEqual([
      [0, 'agenda-1', 'analyst', 'answered'],
      [1, 'agenda-1', 'ops', 'no_agent'],
      [2, 'agenda-2', 'analyst', 'answered'],
    ]);
    expect(round2[0]).toMatchObject({
      runId,
      round: 2,
      prompt: { system: 'You are analyst.', messages: [{ role: 'user', content: 'agenda-1 round 2' }] },
      answer: { text: 'analyst r2' },
      endpointId: 'primary-anthropic',
      degraded: false,
      usage: { inputTokens: 10, outputTokens: 5 },
      faults: [{ kind: 'rate_limited', status: 429, retryAfterMs: 2_000 }],
      waitMs: 1_250,
      idempotencyKey: 'agenda-1:analyst:2',
    });
    expect(round2[1]).toMatchObject({ endpointId: null, idempotencyKey: null });
    expect((await store.listTurns(runId)).map((t) => t.round)).toEqual([1, 1, 1, 2, 2, 2]);
    expect((await store.listRounds(runId)).map((r) => [r.round, r.summary])).toEqual([
      [1, { round: 1, tag: '' }],
      [2, { round: 2, tag: '' }],
    ]);
  });

  it('refuses to commit the same round twice and changes nothing', async () => {
    const runId = await newRun();
    await store.commitRound(roundInput(runId, 1));
    const before = await footprint(database, runId);
    const turnsBefore = await store.listTurns(runId);

    const error = await conflictOf(store.commitRound(roundInput(runId, 1, ' (again)')));
    expect(error.code).toBe('ROUND_COMMIT_CONFLICT');
    expect(error).toMatchObject({ runId, round: 1, currentRound: 1, reason: 'already_committed' });
    expect(error.message).toContain(runId);

    expect(await footprint(database, runId)).toEqual(before);
    expect(await store.listTurns(runId)).toEqual(turnsBefore);
  });

  it('refuses round 3 before round 2 and changes nothing', async () => {
    const runId = await newRun();
    await store.commitRound(roundInput(runId, 1));
    const before = await footprint(database, runId);

    const error = await conflictOf(store.commitRound(roundInput(runId, 3)));
    expect(error).toMatchObject({ round: 3, currentRound: 1, reason: 'out_of_order' });
    expect(await footprint(database, runId)).toEqual(before);
    expect(await store.listTurns(runId, { round: 3 })).toEqual([]);

    // The gap is still fillable: round 2 then round 3 go through.
    await store.commitRound(roundInput(runId, 2));
    await store.commitRound(roundInput(runId, 3));
    expect((await store.getRun(runId))?.currentRound).toBe(3);
  });

  it('refuses a commit for a run that does not exist', async () => {
    const runId = uniqueId('missing');
    const error = await conflictOf(store.commitRound(roundInput(runId, 1)));
    expect(error).toMatchObject({ reason: 'run_not_found', currentRound: undefined });
    expect(await footprint(database, runId)).toEqual({
      rounds: 0,
      turns: 0,
      states: 0,
      currentRound: undefined,
    });
  });

  it('lets exactly one of several concurrent commits of the same round win', async () => {
    const runId = await newRun();
    await store.commitRound(roundInput(runId, 1));
    const racers = ['a', 'b', 'c', 'd'].map((tag) =>
      store.commitRound(roundInput(runId, 2, ` racer ${tag}`)),
    );
    const settled = await Promise.allSettled(racers);

    const won = settled.filter((s) => s.status === 'fulfilled');
    const lost = settled.filter((s) => s.status === 'rejected');
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(3);
    for (const l of lost) expect(isRoundCommitConflictError(l.reason)).toBe(true);

    expect(await footprint(database, runId)).toEqual({ rounds: 2, turns: 6, states: 2, currentRound: 2 });
    // Every stored turn of round 2 comes from the same (winning) commit.
    const tags = new Set(
      (await store.listTurns(runId, { round: 2 }))
        .filter((t) => t.outcome === 'answered')
        .map((t) => String((t.answer as { text: string }).text).split(' racer ')[1]),
    );
    expect(tags.size).toBe(1);
  });

  it('holds the unique (run, round, item, agent) turn key', async () => {
    const runId = await newRun();
    const duplicate = {
      runId,
      round: 1,
      turns: [turn('agenda-1', 'analyst', 1), turn('agenda-1', 'analyst', 1, { answer: 'second' })],
    };
    const error = await store.commitRound(duplicate).catch((e: unknown) => e);
    expect(isStoreInputError(error)).toBe(true);
    expect(String(error)).toContain('turns[1]');
    expect(await footprint(database, runId)).toEqual({ rounds: 0, turns: 0, states: 0, currentRound: 0 });

    // The database itself enforces the key, whatever code writes to it.
    await store.commitRound({ runId, round: 1, turns: [turn('agenda-1', 'analyst', 1)] });
    const [stored] = await database.db.selectFrom('turns').selectAll().where('run_id', '=', runId).execute();
    await expect(
      database.db
        .insertInto('turns')
        .values({ ...stored!, answer: JSON.stringify('sneaked in'), prompt: '{}', usage: null, faults: '[]' })
        .execute(),
    ).rejects.toMatchObject({ code: '23505' });
    expect(await footprint(database, runId)).toEqual({ rounds: 1, turns: 1, states: 0, currentRound: 1 });
  });

  it('rolls the whole round back when aborted mid-transaction', async () => {
    const runId = await newRun();
    const controller = new AbortController();
    // The first check runs before the transaction; abort right after it so the next check, inside the
    // transaction after the compare-and-set and the round row, throws.
    let checks = 0;
    const signal = new Proxy(controller.signal, {
      get(target, prop) {
        if (prop === 'throwIfAborted') {
          return () => {
            checks++;
            if (checks === 2) controller.abort(new Error('stop now'));
            target.throwIfAborted();
          };
        }
        const value = Reflect.get(target, prop, target);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    await expect(store.commitRound(roundInput(runId, 1), { signal })).rejects.toThrow('stop now');
    expect(checks).toBeGreaterThanOrEqual(2);
    expect(await footprint(database, runId)).toEqual({ rounds: 0, turns: 0, states: 0, currentRound: 0 });
    await store.commitRound(roundInput(runId, 1));
    expect((await store.getRun(runId))?.currentRound).toBe(1);
  });

  it('refuses two states for one agent, before writing anything (shapes are checked on load, not here)', async () => {
    const runId = await newRun();
    const bad = {
      runId,
      round: 1,
      turns: [turn('agenda-1', 'analyst', 1)],
      states: [state('analyst', 1), state('analyst', 1)],
    };
    const error = await store.commitRound(bad).catch((e: unknown) => e);
    expect(isStoreInputError(error)).toBe(true);
    expect(String(error)).toContain('states[1]');
    expect(await footprint(database, runId)).toEqual({ rounds: 0, turns: 0, states: 0, currentRound: 0 });
  });

  it('commits a round of 1 500 turns (more than one insert batch) atomically', async () => {
    const runId = await newRun();
    const turns = Array.from({ length: 1_500 }, (_, i) => turn(`item-${i}`, 'analyst', 1));
    await store.commitRound({ runId, round: 1, turns, states: [state('analyst', 1)] });
    const stored = await store.listTurns(runId);
    expect(stored).toHaveLength(1_500);
    expect(stored.at(-1)).toMatchObject({ position: 1_499, itemId: 'item-1499' });
  });
});
