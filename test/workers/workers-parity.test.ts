import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../../src/report/report-types.ts';
import { cleanEnv, runCli } from '../cli/run-cli.ts';
import { perFileDatabase, postgresUrl } from '../support/coordination-env.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
perFileDatabase();

/*
 * One process and `--workers 3` judge a scenario alike: the real CLI runs each shipped scenario on its scaled clock
 * (agent8-storm as shipped, about a minute a run; morning-peak at timeScale 60 instead of 150, as
 * cli-workers.test.ts does and for its reason) both ways on one PostgreSQL store (the workers' tokens and endpoint health
 * on it), and the two reports agree on the verdict (the same failed checks), on degraded turns (the workers' run
 * at most 2 more) and on the critical tier's success rate (within 1 point). Under workers a wait for a global
 * token used to degrade the turn past `maxWaitMs`, which one process never does.
 */

/**
 * morning-peak at timeScale 60: its checks are on the run's clock, so only the real time each simulated minute
 * leaves the processes changes. At 150 on a machine loaded far beyond its cores (load average 35 on 2), the
 * workers' run fell back to sonnet more (25 calls in its peak hour against the check's 20) where one process did not.
 */
function morningPeakSlower(): string {
  const shipped = readFileSync(
    new URL('../../scenarios/morning-peak/scenario.yaml', import.meta.url),
    'utf8',
  );
  const slower = shipped.replace(/^timeScale: 150$/m, 'timeScale: 60');
  if (slower === shipped) throw new Error('morning-peak no longer says "timeScale: 150": update this test');
  return slower;
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'bw-workers-parity-'));
  writeFileSync(join(dir, 'morning-peak.yaml'), morningPeakSlower());
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

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
    { name: 'morning-peak', scenario: () => join(dir, 'morning-peak.yaml'), critical: 'analysis' },
    { name: 'agent8-storm', scenario: () => 'agent8-storm', critical: 'incident' },
  ])(
    '$name',
    async ({ scenario, critical }) => {
      const one = verdictOf(await report(scenario(), false), critical);
      const three = verdictOf(await report(scenario(), true), critical);
      expect(three.allPassed).toBe(one.allPassed);
      expect(three.failedChecks).toEqual(one.failedChecks);
      expect(three.degraded).toBeLessThanOrEqual(one.degraded + 2);
      expect(Math.abs(three.critical - one.critical)).toBeLessThanOrEqual(0.01);
    },
    900_000,
  );
});
