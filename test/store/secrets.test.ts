import { randomBytes } from 'node:crypto';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { maskSecret, registerSecret } from '../../src/redact/secret-scrubber.ts';
import {
  type BreakwaterDatabase,
  type RunStore,
  createRunStore,
  isStoreInputError,
} from '../../src/store/index.ts';
import {
  BACKENDS,
  FAULT,
  MACHINE_VERSION,
  deleteRuns,
  snapshotData,
  turn,
  uniqueId,
} from './store-test-support.ts';

const TABLES = ['runs', 'rounds', 'turns', 'agent_snapshots', 'call_results', 'events'] as const;

describe.each(BACKENDS)('no secret reaches a row on $name', (backend) => {
  let database: BreakwaterDatabase;
  let store: RunStore;
  const runIds: string[] = [];
  // A BYOK key with no known provider shape: only registration can catch it.
  const secret = `byok-${randomBytes(12).toString('hex')}`;
  // An unregistered key with a provider shape: the shape net must catch it.
  const shaped = `sk-proj-${randomBytes(16).toString('hex')}`;
  let forget: () => void = () => {};

  beforeAll(async () => {
    forget = registerSecret(secret);
    database = await backend.open();
    store = createRunStore(database);
  });
  afterAll(async () => {
    forget();
    await deleteRuns(database, runIds);
    await database?.close();
  });

  /** Whole-row text search in every table: any column, any depth of JSON. */
  async function rowsContaining(needle: string): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const table of TABLES) {
      const { rows } = await sql<{ n: string | number }>`
        select count(*) as n from ${sql.table(table)} t where t::text like ${`%${needle}%`}`.execute(
        database.db,
      );
      out[table] = Number(rows[0]?.n);
    }
    return out;
  }
  const none = Object.fromEntries(TABLES.map((t) => [t, 0]));

  it('scrubs a registered secret and a key-shaped string from every JSON and text column', async () => {
    const runId = uniqueId('secret');
    runIds.push(runId);
    const leak = (where: string) => `${where}: key ${secret} and ${shaped}`;

    await store.createRun({
      runId,
      scenario: leak('scenario'),
      config: { endpoints: [{ id: 'byok', apiKey: secret, headers: { authorization: `Bearer ${shaped}` } }] },
      totalRounds: 1,
      machineVersion: MACHINE_VERSION,
    });
    await store.rememberCall({ runId, idempotencyKey: `${runId}:call`, result: { text: leak('result') } });
    await store.commitRound({
      runId,
      round: 1,
      turns: [
        turn('agenda-1', 'analyst', 1, {
          prompt: { messages: [{ role: 'user', content: leak('prompt') }] },
          answer: { text: leak('answer') },
          faults: [{ ...FAULT, message: leak('fault') }],
        }),
      ],
      snapshots: [
        {
          agent: 'analyst',
          data: snapshotData('analyst', 1, {
            memory: { [secret]: leak('memory value') },
            utterances: [leak('utterance')],
            actorSnapshot: { status: 'active', value: 'idle', context: { lastError: leak('context') } },
          }),
        },
      ],
      summary: { note: leak('summary') },
    });
    await store.appendEvents(runId, [
      { seq: 1, at: 1, type: 'BYOK_ADDED', agent: 'analyst', data: { key: leak('event') } },
    ]);

    expect(await rowsContaining(secret)).toEqual(none);
    expect(await rowsContaining(shaped)).toEqual(none);

    // Positive control: the data is there, masked, so the search above would have found the plaintext.
    const masked = maskSecret(secret);
    expect((await store.listTurns(runId))[0]?.answer).toEqual({
      text: `answer: key ${masked} and ${maskSecret(shaped)}`,
    });
    const { analyst } = await store.loadLatestSnapshots(runId, { machineVersion: MACHINE_VERSION });
    expect(analyst?.data.memory).toEqual({
      [masked]: `memory value: key ${masked} and ${maskSecret(shaped)}`,
    });
    expect(await rowsContaining(`key ${masked}`)).toEqual(Object.fromEntries(TABLES.map((t) => [t, 1])));
  });

  it('refuses an identifier that carries a registered secret instead of storing it', async () => {
    const runId = uniqueId(`secret-${secret}`);
    const error = await store
      .createRun({ runId, scenario: 's', totalRounds: 1, machineVersion: MACHINE_VERSION })
      .catch((e: unknown) => e);
    expect(isStoreInputError(error)).toBe(true);
    expect(String(error)).not.toContain(secret);

    const okRun = uniqueId('secret');
    runIds.push(okRun);
    await store.createRun({ runId: okRun, scenario: 's', totalRounds: 1, machineVersion: MACHINE_VERSION });
    const keyError = await store
      .rememberCall({ runId: okRun, idempotencyKey: `call-${secret}`, result: 1 })
      .catch((e: unknown) => e);
    expect(isStoreInputError(keyError)).toBe(true);
    expect(await rowsContaining(secret)).toEqual(none);
  });
});
