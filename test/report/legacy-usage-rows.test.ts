import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Usage } from '../../src/core/engine-types.ts';
import { loadRunReport } from '../../src/report/load-run-report.ts';
import type { BreakwaterDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import {
  BACKENDS,
  deleteRuns,
  MACHINE_VERSION,
  perFileDatabase,
  turn,
  uniqueId,
} from '../store/store-test-support.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
perFileDatabase();

/*
 * Runs stored before usage could be unknown stay readable: their rows hold `{ inputTokens, outputTokens }` numbers
 * with no flag, and read back as reported (what they claimed). A row of today holds the flag and keeps an unknown
 * count null through JSONB. A hand-edited usage that is not a usage reads as no usage, not as a guess. PGlite and
 * the PostgreSQL server.
 */

describe.each(BACKENDS)('usage rows on $name', (backend) => {
  let database: BreakwaterDatabase;
  const runIds: string[] = [];
  beforeAll(async () => {
    database = await backend.open();
  });
  afterAll(async () => {
    await deleteRuns(database, runIds);
    await database.close();
  });

  it('old rows decode as reported; unknown counts stay null with their flag; a bad value is no usage', async () => {
    const store = createRunStore(database);
    const runId = uniqueId('usage-rows');
    runIds.push(runId);
    await store.createRun({ runId, scenario: 'usage-rows', totalRounds: 1, machineVersion: MACHINE_VERSION });
    const unknown: Usage = {
      inputTokens: null,
      outputTokens: null,
      source: 'unknown',
      estimated: { inputTokens: 30, outputTokens: 12 },
    };
    await store.commitRound({
      runId,
      round: 1,
      turns: [
        // As a breakwater before this change stored it: two numbers, no flag.
        turn('I1', 'Kai', 1, { usage: { inputTokens: 10, outputTokens: 5 } as unknown as Usage }),
        turn('I1', 'Yuna', 1, { usage: unknown }),
        turn('I1', 'Rex', 1, { usage: { inputTokens: 'many' } as unknown as Usage }),
        turn('I1', 'Ana', 1, { usage: null }),
      ],
      states: [],
    });
    const byAgent = new Map((await store.listTurns(runId)).map((t) => [t.agent, t.usage]));
    expect(byAgent.get('Kai')).toEqual({ inputTokens: 10, outputTokens: 5, source: 'reported' });
    expect(byAgent.get('Yuna')).toEqual(unknown);
    expect(byAgent.get('Rex')).toBeNull();
    expect(byAgent.get('Ana')).toBeNull();

    const report = await loadRunReport(store, runId);
    expect(report.usage).toEqual({
      turns: 2,
      reportedTurns: 1,
      unknownTurns: 1,
      input: { reported: 10, unreportedTurns: 1, estimated: 30 },
      output: { reported: 5, unreportedTurns: 1, estimated: 12 },
    });
  });
});
