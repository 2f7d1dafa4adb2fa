import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../../src/report/report-types.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { perFileDatabase, postgresUrl } from '../support/coordination-env.ts';
import { cliReport, expectSameVerdict, morningPeakSlower } from './parity-verdict.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
// At most 32 PostgreSQL connections at once: three workers, their parent and the test (measured peak, with room).
perFileDatabase({ connections: 32 });

/*
 * `breakwater run morning-peak --workers 3` as a user runs it (real CLI processes: the parent and its 3 workers, one
 * PostgreSQL database, the emulator the parent starts on the run's own clock, whose record says how many calls were
 * ever in flight at once), at timeScale 60 (test/workers/parity-verdict.ts says why). Its 150 simulated minutes take
 * 2.5 minutes of real time, so the suite makes this run once and judges it two ways: against seed 000's checks, and
 * against one process's verdict on the same scenario.
 */

let dir: string;
let workers: { report: RunReport; stderr: string };

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'bw-morning-peak-workers-'));
  writeFileSync(join(dir, 'morning-peak.yaml'), morningPeakSlower());
  workers = await cliReport(join(dir, 'morning-peak.yaml'), { workers: 3 });
}, 600_000);
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

/** The run's failed and degraded turns, one line each (agent, round, item, outcome, error, faults). */
async function failedTurnsOf(runId: string): Promise<string> {
  const database = await openDatabase({ url: postgresUrl() });
  try {
    const rows = await database.db
      .selectFrom('turns')
      .select(['agent', 'round', 'item_id', 'outcome', 'answer', 'faults'])
      .where('run_id', '=', runId)
      .where('outcome', 'in', ['failed', 'degraded'])
      .execute();
    return rows
      .map(
        (r) =>
          `${r.agent} round ${r.round} ${r.item_id}: ${r.outcome} ${JSON.stringify(r.answer)} faults ${JSON.stringify(r.faults)}`,
      )
      .join('\n');
  } finally {
    await database.close();
  }
}

describe('morning-peak with --workers 3', () => {
  it('passes every seed-000 check; the emulator never saw more than 3 calls in flight', async () => {
    const { report, stderr } = workers;
    expect(stderr).not.toMatch(/error|Error/);
    expect(report.status).toBe('completed');
    const failedChecks = report.checks.filter((c) => c.threshold !== null && c.pass === false);
    // A failed check says which turns failed and why (from the stored run), so a failure in CI can be read.
    const why = failedChecks.length > 0 ? await failedTurnsOf(report.runId) : '';
    expect(failedChecks, why).toEqual([]);
    expect(report.allPassed).toBe(true);
    const inFlight = report.checks.find((c) => c.name === 'max LLM calls in flight in any second')!;
    expect(inFlight.pass).toBe(true);
    // Across all processes together, by the emulator's own record.
    expect(report.emulator!.totalCalls).toBeGreaterThan(0);
    expect(report.emulator!.maxInFlight).toBeLessThanOrEqual(3);
    // Which worker did what: three workers, their turns adding up to every turn of the run.
    const byWorker = report.byWorker ?? {};
    expect(Object.keys(byWorker)).toHaveLength(3);
    expect(Object.values(byWorker).reduce((a, b) => a + b, 0)).toBe(report.turns.total);
  });

  it('gives the verdict one process gives (the real CLI, on a virtual clock)', async () => {
    const one = await cliReport(join(dir, 'morning-peak.yaml'), { virtualTime: true });
    expectSameVerdict('morning-peak', one.report, workers.report, 'analysis');
  }, 300_000);
});
