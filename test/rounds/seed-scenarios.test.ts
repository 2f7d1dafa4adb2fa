import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadRunReport } from '../../src/report/load-run-report.ts';
import type { RunReport } from '../../src/report/report-types.ts';
import { type RunPolicy, runScenario } from '../../src/rounds/run-scenario.ts';
import { loadScenario, resolveScenario } from '../../src/scenarios/load-scenario.ts';
import type { ScenarioSpec } from '../../src/scenarios/scenario-types.ts';
import { type BreakwaterDatabase, createRunStore, openDatabase } from '../../src/store/index.ts';

/*
 * The two seed incidents, replayed as the product runs them (in-process emulator, the round runner, the event
 * log, the report). Time runs faster than in `npm start` so the suite stays short; the scenarios are
 * otherwise exactly the shipped files.
 */

let database: BreakwaterDatabase;
beforeAll(async () => {
  database = await openDatabase({ dataDir: ':memory:' });
});
afterAll(async () => {
  await database.close();
});

async function replay(name: string, policy: RunPolicy, speedUp: number): Promise<RunReport> {
  const shipped = loadScenario(resolveScenario(name));
  const scenario: ScenarioSpec = { ...shipped, timeScale: (shipped.timeScale ?? 1) * speedUp };
  const result = await runScenario({ scenario, policy, database, runId: `${name}-${policy}-${Date.now()}` });
  expect(result.run.status).toBe('completed');
  return loadRunReport(createRunStore(database), result.runId);
}

const check = (report: RunReport, id: string) => {
  const c = report.checks.find((x) => x.id === id);
  if (!c) throw new Error(`no check ${id} in ${report.checks.map((x) => x.id).join(', ')}`);
  return c;
};

describe('seed 000: morning peak', () => {
  it('under breakwater every seed-000 check passes', async () => {
    const report = await replay('morning-peak', 'breakwater', 2);
    for (const id of [
      'max-in-flight',
      'sonnet-calls-per-hour',
      'cooling-down-messages',
      'failure-rate',
      'analysis-success-rate',
      'placeholders',
    ]) {
      expect({ id, pass: check(report, id).pass }).toEqual({ id, pass: true });
    }
    expect(check(report, 'max-in-flight').value).toBeLessThanOrEqual(3);
    expect(report.turns.noAgent).toBeGreaterThan(0);
  }, 240_000);

  it('under the status-quo policy the seed’s failures appear', async () => {
    const report = await replay('morning-peak', 'status-quo', 2);
    expect(report.policy).toBe('status-quo');
    expect(check(report, 'max-in-flight').pass).toBe(false);
    expect(report.checks.some((c) => c.pass === false && c.id !== 'max-in-flight')).toBe(true);
    expect(report.turns.noAgent).toBe(0);
  }, 240_000);
});

describe('seed 003: agent8 storm', () => {
  it('every turn is answered (normal, fallback or labelled degraded), none a placeholder, never more than 3 in flight', async () => {
    const report = await replay('agent8-storm', 'breakwater', 2);
    expect(report.turns.total).toBe(8 * 35 * 3);
    expect(report.turns.failed).toBe(0);
    expect(report.turns.placeholders).toBe(0);
    expect(report.turns.answered + report.turns.fallback + report.turns.degraded).toBe(report.turns.total);
    expect(check(report, 'max-in-flight').value).toBeLessThanOrEqual(3);
    expect(report.allPassed).toBe(true);
  }, 240_000);
});
