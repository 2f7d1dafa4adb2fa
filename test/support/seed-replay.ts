import { expect } from 'vitest';
import { loadRunReport } from '../../src/report/load-run-report.ts';
import type { ReportCheck, RunReport } from '../../src/report/report-types.ts';
import { type RunPolicy, runScenario } from '../../src/runs/run-scenario.ts';
import { loadScenario, resolveScenario } from '../../src/scenarios/load-scenario.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { openDatabase } from '../../src/store/open-database.ts';

/**
 * Replays a shipped seed scenario as the product runs it (in-process emulator, round runner, event log,
 * report), on an in-memory PGlite, on a virtual clock: simulated time stands still while real work runs
 * and jumps to the next timer when nothing else is left, so the replay takes as long as the CPU needs
 * and its timeline (hence every check's verdict) is the same on a fast, a slow or a loaded machine.
 * The scenario is exactly the shipped file.
 */
export async function replaySeed(name: string, policy: RunPolicy): Promise<RunReport> {
  const database = await openDatabase({ dataDir: ':memory:' });
  try {
    const scenario: ScenarioSpec = loadScenario(resolveScenario(name));
    const result = await runScenario({
      scenario,
      policy,
      database,
      runId: `${name}-${policy}-${Date.now()}`,
      virtualTime: true,
    });
    expect(result.run.status).toBe('completed');
    // The clock never jumped past real work it could not see finish (its 30 s safety valve): a forced jump would
    // make the timeline depend on the machine again.
    expect(result.forcedClockJumps).toBe(0);
    return await loadRunReport(createRunStore(database), result.runId);
  } finally {
    await database.close();
  }
}

/** One check of a report, by id. */
export function checkOf(report: RunReport, id: string): ReportCheck {
  const c = report.checks.find((x) => x.id === id);
  if (!c) throw new Error(`no check ${id} in ${report.checks.map((x) => x.id).join(', ')}`);
  return c;
}
