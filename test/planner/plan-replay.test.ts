import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { planSchedule } from '../../src/planner/plan-schedule.ts';
import { rewriteScenario } from '../../src/planner/scenario-rewrite.ts';
import { loadRunReport } from '../../src/report/load-run-report.ts';
import type { RunReport } from '../../src/report/report-types.ts';
import { runScenario } from '../../src/runs/run-scenario.ts';
import { loadScenario, resolveScenario } from '../../src/scenarios/load-scenario.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { openDatabase } from '../../src/store/open-database.ts';

/*
 * The proposal, replayed: seed 000's schedule as it was and the schedule `plan --write` proposes, each run
 * by the real runner (in-process emulator over HTTP, PGlite in memory) under the same breakwater policy,
 * on a virtual clock so the verdicts do not depend on the machine's speed.
 */

const dir = mkdtempSync(join(tmpdir(), 'bw-plan-replay-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const SEED_CHECKS = [
  'max-in-flight',
  'sonnet-calls-per-hour',
  'cooling-down-messages',
  'failure-rate',
  'analysis-success-rate',
  'placeholders',
];

async function replay(file: string, runId: string): Promise<RunReport> {
  const database = await openDatabase({ dataDir: ':memory:' });
  try {
    const result = await runScenario({
      scenario: loadScenario(file),
      policy: 'breakwater',
      database,
      runId,
      virtualTime: true,
    });
    expect(result.run.status).toBe('completed');
    return await loadRunReport(createRunStore(database), runId);
  } finally {
    await database.close();
  }
}

const figures = (r: RunReport) =>
  `${r.turns.fallback} fallback, ${r.turns.degraded} degraded, ${r.turns.noAgent} no_agent of ${r.turns.total} turns; ` +
  SEED_CHECKS.map((id) => {
    const c = r.checks.find((x) => x.id === id)!;
    return `${id} ${c.value === null ? '—' : Number(c.value.toFixed(3))} ${c.pass ? 'PASS' : 'FAIL'}`;
  }).join(', ');

describe('the planned schedule, replayed with the real runner', () => {
  it('passes every seed-000 check with fewer fallback and degraded turns than the unplanned one', async () => {
    const source = resolveScenario('morning-peak-before-fixes');
    const plan = planSchedule(loadScenario(source));
    expect(plan.proposal.fits).toBe(true);
    const planned = join(dir, 'planned.yaml');
    writeFileSync(planned, rewriteScenario(readFileSync(source, 'utf8'), plan.proposal.moves));

    const before = await replay(source, 'unplanned');
    const after = await replay(planned, 'planned');
    process.stdout.write(
      `\n[plan replay] unplanned (morning-peak-before-fixes): ${figures(before)}` +
        `\n[plan replay] planned (${plan.proposal.moves.length} moves): ${figures(after)}` +
        `\n[plan replay] fallback + degraded turns: unplanned ${before.turns.fallback + before.turns.degraded}, planned ${after.turns.fallback + after.turns.degraded}` +
        ` (predicted fallbacks ${plan.before.spilled} → ${plan.after.spilled})\n`,
    );

    for (const id of SEED_CHECKS) {
      const c = after.checks.find((x) => x.id === id)!;
      expect({ id, pass: c.pass }).toEqual({ id, pass: true });
    }
    expect(after.turns.failed).toBe(0);
    expect(after.turns.fallback).toBeLessThanOrEqual(before.turns.fallback);
    expect(after.turns.degraded).toBeLessThanOrEqual(before.turns.degraded);
    expect(after.turns.fallback + after.turns.degraded).toBeLessThan(
      before.turns.fallback + before.turns.degraded,
    );
    // The flusher ran as plain code in the planned run, through the LLM in the unplanned one.
    expect(before.turns.noAgent).toBe(0);
    expect(after.turns.noAgent).toBe(75);
  }, 300_000);
});
