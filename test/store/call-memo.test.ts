import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { type RunStore, createRunStore } from '../../src/store/run-store.ts';
import { isStoreInputError } from '../../src/store/store-errors.ts';
import { BACKENDS, perFileDatabase, postgresUrl, deleteRuns, uniqueId } from './store-test-support.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
perFileDatabase();

const engineResult = (text: string) => ({
  text,
  toolCalls: [],
  stopReason: 'end_turn',
  usage: { inputTokens: 12, outputTokens: 7 },
  endpoint: { id: 'primary-openai', provider: 'openai', model: 'gpt-x', keyFingerprint: '0a1b2c3d' },
  model: 'gpt-x-2026',
  rateLimit: { requests: { remaining: 3 } },
  latencyMs: 420,
});

describe.each(BACKENDS)('call memo on $name', (backend) => {
  let database: BreakwaterDatabase;
  let store: RunStore;
  const runIds: string[] = [];
  const scratchDirs: string[] = [];

  beforeAll(async () => {
    database = await backend.open();
    store = createRunStore(database);
  });
  afterAll(async () => {
    await deleteRuns(database, runIds);
    await database?.close();
    for (const dir of scratchDirs) await rm(dir, { recursive: true, force: true });
  });

  function newRunId(): string {
    const runId = uniqueId('memo');
    runIds.push(runId);
    return runId;
  }

  it('remembers a result and recalls it; unknown keys recall undefined', async () => {
    const runId = newRunId();
    const key = `${runId}:1:agenda-1:analyst:0`;
    expect(await store.recallCall(key)).toBeUndefined();
    const stored = await store.rememberCall({ runId, idempotencyKey: key, result: engineResult('first') });
    expect(stored).toEqual(engineResult('first'));
    expect(await store.recallCall(key)).toEqual(engineResult('first'));
  });

  it('keeps the first writer’s value: a second remember returns it instead of its own', async () => {
    const runId = newRunId();
    const key = `${runId}:k`;
    await store.rememberCall({ runId, idempotencyKey: key, result: engineResult('first') });
    const second = await store.rememberCall({ runId, idempotencyKey: key, result: engineResult('second') });
    expect(second).toEqual(engineResult('first'));
    expect(await store.recallCall(key)).toEqual(engineResult('first'));
  });

  it('makes concurrent racers on one key agree on a single stored value', async () => {
    const runId = newRunId();
    const key = `${runId}:race`;
    const answers = await Promise.all(
      ['a', 'b', 'c', 'd', 'e'].map((tag) =>
        store.rememberCall({ runId, idempotencyKey: key, result: { tag } }),
      ),
    );
    const stored = await store.recallCall<{ tag: string }>(key);
    expect(stored).toBeDefined();
    for (const answer of answers) expect(answer).toEqual(stored);
  });

  it('recalls many keys at once, leaving out the missing ones', async () => {
    const runId = newRunId();
    const keys = Array.from({ length: 5 }, (_, i) => `${runId}:${i}`);
    for (const [i, key] of keys.entries()) {
      if (i % 2 === 0) await store.rememberCall({ runId, idempotencyKey: key, result: { i } });
    }
    const found = await store.recallCalls<{ i: number }>([...keys, keys[0]!]);
    expect(found).toEqual({ [keys[0]!]: { i: 0 }, [keys[2]!]: { i: 2 }, [keys[4]!]: { i: 4 } });
    expect(await store.recallCalls([])).toEqual({});
  });

  it('stores any JSON value as it is: strings, arrays, numbers, null; Dates as ISO text; NUL made safe', async () => {
    const runId = newRunId();
    const cases: [string, unknown, unknown][] = [
      ['string', 'plain text', 'plain text'],
      ['array', [1, 'two', { three: 3 }], [1, 'two', { three: 3 }]],
      ['number', 42.5, 42.5],
      ['null', null, null],
      ['date', { at: new Date('2026-08-17T07:00:00.000Z') }, { at: '2026-08-17T07:00:00.000Z' }],
      ['nul', { text: 'a\u0000b' }, { text: 'a\uFFFDb' }],
    ];
    for (const [name, input, expected] of cases) {
      const key = `${runId}:${name}`;
      expect(await store.rememberCall({ runId, idempotencyKey: key, result: input }), name).toEqual(expected);
      expect(await store.recallCall(key), name).toEqual(expected);
    }
  });

  it('refuses a value that is not JSON and an empty key', async () => {
    const runId = newRunId();
    const notJson = await store
      .rememberCall({ runId, idempotencyKey: `${runId}:big`, result: { n: 10n } })
      .catch((e: unknown) => e);
    expect(isStoreInputError(notJson)).toBe(true);
    expect(String(notJson)).toContain('result');
    const emptyKey = await store
      .rememberCall({ runId, idempotencyKey: '', result: 1 })
      .catch((e: unknown) => e);
    expect(isStoreInputError(emptyKey)).toBe(true);
  });

  it('survives a crash: close, reopen on the same data, read back; the first value still wins', async () => {
    let reopen: () => Promise<BreakwaterDatabase>;
    if (backend.name === 'pglite') {
      const dir = await mkdtemp(join(tmpdir(), 'breakwater-memo-'));
      scratchDirs.push(dir);
      reopen = () => openDatabase({ dataDir: dir });
    } else {
      reopen = () => openDatabase({ url: postgresUrl() });
    }
    const runId = newRunId();
    const key = `${runId}:1:agenda-1:analyst:0`;

    const before = await reopen();
    await createRunStore(before).rememberCall({
      runId,
      idempotencyKey: key,
      result: engineResult('before crash'),
    });
    await before.close();

    const after = await reopen();
    try {
      expect(after.migrated).toEqual([]);
      const store2 = createRunStore(after);
      expect(await store2.recallCall(key)).toEqual(engineResult('before crash'));
      expect(
        await store2.rememberCall({ runId, idempotencyKey: key, result: engineResult('after') }),
      ).toEqual(engineResult('before crash'));
    } finally {
      if (backend.name === 'postgres') await deleteRuns(after, [runId]);
      await after.close();
    }
  });
});
