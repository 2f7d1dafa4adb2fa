import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import type { RunReport } from '../../src/report/report-types.ts';
import { cleanEnv, runCli } from '../cli/run-cli.ts';
import { postgresUrl } from '../support/coordination-env.ts';

/*
 * What the workers parity files share: one process and `--workers 3` judge a scenario alike. The workers' run is on
 * the scenario's scaled clock (it cannot be otherwise: its processes share wall-time leases); the one-process run
 * is the real CLI on a virtual clock (`--virtual-time`), which gives the scenario's own timeline whatever the
 * machine's load, in seconds of CPU instead of the scaled clock's minutes of real time. The reports agree on the
 * verdict (the same failed checks), on degraded turns (the workers' run at most 2 more) and on the critical tier's
 * success rate (within 1 point). Under workers a wait for a global token used to degrade the turn past
 * `maxWaitMs`, which one process never does.
 */

/**
 * morning-peak at timeScale 60 instead of 150: its checks are on the run's clock, so only the real time each
 * simulated minute leaves the worker processes changes. At 150 a simulated minute is 0.4 s of real time, and on a
 * machine loaded far beyond its cores (load average 35 on 2) starved workers saw their token waits (180 s
 * simulated) run out and fell back to sonnet more (CI once counted 24-25 sonnet calls in the peak hour against the
 * check's 20; a quiet machine gives 3-5). The shipped speed is what `npm start` and a user's `run morning-peak
 * --workers 3` use.
 */
export function morningPeakSlower(): string {
  const shipped = readFileSync(
    new URL('../../scenarios/morning-peak/scenario.yaml', import.meta.url),
    'utf8',
  );
  const slower = shipped.replace(/^timeScale: 150$/m, 'timeScale: 60');
  if (slower === shipped) throw new Error('morning-peak no longer says "timeScale: 150": update this test');
  return slower;
}

/** The report of `breakwater run <scenario> --json` on this file's PostgreSQL database, one process or workers. */
export async function cliReport(
  scenario: string,
  how: { workers?: number; virtualTime?: boolean },
): Promise<{ report: RunReport; stderr: string }> {
  const run = await runCli(
    [
      'run',
      scenario,
      ...(how.workers !== undefined ? ['--workers', String(how.workers)] : []),
      ...(how.virtualTime ? ['--virtual-time'] : []),
      '--database-url',
      postgresUrl(),
      '--json',
      '--no-stdin',
    ],
    cleanEnv(),
  );
  expect(run.code, run.stderr.slice(-2_000)).toBe(0);
  // A forced jump of the virtual clock (its safety valve) would make the reference depend on the machine again.
  expect(run.stderr).not.toContain('virtual clock:');
  return { report: JSON.parse(run.stdout.trim().split('\n').pop()!) as RunReport, stderr: run.stderr };
}

/** The failed checks by name (what a verdict is made of), the degraded turns and the critical tier's success. */
export function verdictOf(r: RunReport, criticalTier: string) {
  return {
    allPassed: r.allPassed,
    failedChecks: r.checks.filter((c) => c.threshold !== null && c.pass === false).map((c) => c.name),
    degraded: r.turns.degraded,
    critical: r.byTier[criticalTier]?.successRate ?? Number.NaN,
  };
}

/** The one-process verdict and the workers' agree (see above); the figures go to stdout for the issue's notes. */
export function expectSameVerdict(
  name: string,
  one: RunReport,
  three: RunReport,
  criticalTier: string,
): void {
  const a = verdictOf(one, criticalTier);
  const b = verdictOf(three, criticalTier);
  process.stdout.write(
    `[workers-parity] ${name}: one process (virtual clock) ${JSON.stringify(a)}; --workers 3 ${JSON.stringify(b)}\n`,
  );
  expect(b.allPassed).toBe(a.allPassed);
  expect(b.failedChecks).toEqual(a.failedChecks);
  expect(b.degraded).toBeLessThanOrEqual(a.degraded + 2);
  expect(Math.abs(b.critical - a.critical)).toBeLessThanOrEqual(0.01);
}
