import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BreakwaterDatabase } from '../../src/store/open-database.ts';
import { type RunStore, createRunStore } from '../../src/store/run-store.ts';
import {
  BACKENDS,
  perFileDatabase,
  FAULT,
  MACHINE_VERSION,
  deleteRuns,
  state,
  turn,
  uniqueId,
} from './store-test-support.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
perFileDatabase();

// Issue 19: keys are kept out of rows by construction (rows are built from ids, fingerprints and
// classified faults), not by scrubbing every registered secret out of everything written. The old
// value-scrubbing turned ordinary words into weapons: a BYOK "key" that was the word `Checkout`
// rewrote every "Checkout" in 48 rows, and one equal to a word of the run id made commits fail. The
// store now keeps what it is given, byte for byte, whatever words it contains.

const TABLES = ['runs', 'rounds', 'turns', 'agent_states', 'call_results', 'events'] as const;

describe.each(BACKENDS)('the store never rewrites or refuses data by its words, on $name', (backend) => {
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

  async function rowsContaining(runId: string, needle: string): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const table of TABLES) {
      const { rows } = await sql<{ n: string | number }>`
        select count(*) as n from ${sql.table(table)} t
        where t.run_id = ${runId} and t::text like ${`%${needle}%`}`.execute(database.db);
      out[table] = Number(rows[0]?.n);
    }
    return out;
  }

  it('ids and text with words like "ollama", "Checkout" and the run id are stored verbatim, in every table', async () => {
    // These were "registered secrets" before (apiKey: ollama; /byok openai Checkout; /byok openai <run id>).
    const runId = uniqueId('ollama-Checkout');
    runIds.push(runId);
    const words = `ollama Checkout ${runId}`;
    await store.createRun({
      runId,
      scenario: `scenario about ${words}`,
      config: { note: words },
      totalRounds: 1,
      machineVersion: MACHINE_VERSION,
    });
    await store.rememberCall({ runId, idempotencyKey: `${runId}:ollama-local`, result: { text: words } });
    await store.commitRound({
      runId,
      round: 1,
      turns: [
        turn('Checkout', 'ollama', 1, {
          endpointId: 'ollama-local',
          prompt: { messages: [{ role: 'user', content: words }] },
          answer: { text: words },
          faults: [{ ...FAULT, message: words, endpointId: 'ollama-local' }],
        }),
      ],
      states: [state('ollama', 1, { slots: { Checkout: words } })],
      summary: { note: words },
    });
    await store.appendEvents(runId, [
      { seq: 1, at: 1, type: 'turn.finished', agent: 'ollama', endpoint: 'ollama-local', data: { words } },
    ]);

    const [t] = await store.listTurns(runId);
    expect(t?.itemId).toBe('Checkout');
    expect(t?.agent).toBe('ollama');
    expect(t?.endpointId).toBe('ollama-local');
    expect(t?.answer).toEqual({ text: words });
    expect(t?.faults[0]?.message).toBe(words);
    const { ollama } = await store.loadAgentStates(runId, { machineVersion: MACHINE_VERSION });
    expect(ollama?.slots).toEqual({ Checkout: words });
    const counts = await rowsContaining(runId, 'Checkout');
    for (const table of TABLES) expect(counts[table], table).toBeGreaterThan(0);
    expect(await rowsContaining(runId, '…')).toEqual(Object.fromEntries(TABLES.map((t) => [t, 0])));
  });

  it('text shaped like a provider key is kept as given too (a model may discuss one): nothing is rewritten', async () => {
    const runId = uniqueId('shape');
    runIds.push(runId);
    const shaped = 'sk-proj-0123456789abcdefghijklmnop';
    await store.createRun({ runId, scenario: 's', totalRounds: 1, machineVersion: MACHINE_VERSION });
    await store.rememberCall({ runId, idempotencyKey: `${runId}:k`, result: { text: `see ${shaped}` } });
    expect(await store.recallCall(`${runId}:k`)).toEqual({ text: `see ${shaped}` });
  });
});
