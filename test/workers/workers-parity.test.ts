import { describe, expect, it } from 'vitest';
import type { RunReport } from '../../src/report/report-types.ts';
import { cleanEnv, runCli } from '../cli/run-cli.ts';
import { perFileDatabase, postgresUrl } from '../support/coordination-env.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
perFileDatabase();

/*
 * One process and `--workers 3` judge a scenario alike: the real CLI runs each shipped scenario as shipped (on its
 * scaled clock, about a minute a run) both ways on one PostgreSQL store (the workers' tokens and endpoint health
 * on it), and the two reports agree on the verdict (the same failed checks), on degraded turns (the workers' run
 * at most 2 more) and on the critical tier's success rate (within 1 point). Under workers a wait for a global
 * token used to degrade the turn past `maxWaitMs`, which one process never does.
 */

async function report(scenario: string, workers: boolean): Promise<RunReport> {
  const run = await runCli(
    [
      'run',
      scenario,
      ...(workers ? ['--workers', '3'] : []),
      '--database-url',
      postgresUrl(),
      '--json',
      '--no-stdin',
    ],
    cleanEnv(),
  );
  expect(run.code, run.stderr.slice(-2_000)).toBe(0);
  return JSON.parse(run.stdout.trim().split('\n').pop()!) as RunReport;
}

/** The failed checks by name (what a verdict is made of), the degraded turns and the critical tier's success. */
function verdictOf(r: RunReport, criticalTier: string) {
  return {
    allPassed: r.allPassed,
    failedChecks: r.checks.filter((c) => c.threshold !== null && c.pass === false).map((c) => c.name),
    degraded: r.turns.degraded,
    critical: r.byTier[criticalTier]?.successRate ?? Number.NaN,
  };
}

describe('one process and --workers 3 give the same verdict', () => {
  it.each([
    { name: 'morning-peak', critical: 'analysis' },
    { name: 'agent8-storm', critical: 'incident' },
  ])(
    '$name',
    async ({ name, critical }) => {
      const one = verdictOf(await report(name, false), critical);
      const three = verdictOf(await report(name, true), critical);
      expect(three.allPassed).toBe(one.allPassed);
      expect(three.failedChecks).toEqual(one.failedChecks);
      expect(three.degraded).toBeLessThanOrEqual(one.degraded + 2);
      expect(Math.abs(three.critical - one.critical)).toBeLessThanOrEqual(0.01);
    },
    400_000,
  );
});
