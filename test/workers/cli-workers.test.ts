import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../../src/report/report-types.ts';
import { cleanEnv, runCli } from '../cli/run-cli.ts';
import { POSTGRES_URL } from '../support/coordination-env.ts';

/*
 * `breakwater run <scenario> --workers N` as a user runs it: real CLI processes (the parent and its N workers), one
 * PostgreSQL database, one emulator over HTTP whose own record says how many calls were ever in flight at once.
 */

const oneLine = (stderr: string) => {
  expect(stderr.endsWith('\n')).toBe(true);
  expect(stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(stderr).not.toMatch(/^\s+at /m);
};

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'bw-cli-workers-'));
});
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
});

describe('breakwater run --workers', () => {
  it('with the embedded store (PGlite) it refuses in one line, saying why and to pass --database-url', async () => {
    const env = cleanEnv();
    delete env.DATABASE_URL;
    const run = await runCli(['run', 'agent8-storm', '--workers', '3', '--data-dir', join(dir, 'pg')], env);
    expect(run.code).toBe(1);
    oneLine(run.stderr);
    expect(run.stderr).toMatch(/PGlite/);
    expect(run.stderr).toContain('--database-url');
  });

  it('breakwater worker without a PostgreSQL URL refuses in one line', async () => {
    const env = cleanEnv();
    delete env.DATABASE_URL;
    const run = await runCli(['worker'], env);
    expect(run.code).toBe(1);
    oneLine(run.stderr);
    expect(run.stderr).toMatch(/^breakwater worker: .*PostgreSQL.*--database-url/);
  });

  it('morning-peak with 3 workers passes every seed-000 check; the emulator never saw more than 3 calls in flight', async () => {
    // The emulator is the one `run --workers` starts on the run's own clock (its fault windows fall in the morning
    // as the scenario means them); the report carries its record of every worker's calls.
    const run = await runCli(
      ['run', 'morning-peak', '--workers', '3', '--database-url', POSTGRES_URL, '--json'],
      cleanEnv(),
    );
    expect(run.stderr).not.toMatch(/error|Error/);
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout.trim().split('\n').pop()!) as RunReport;
    expect(report.status).toBe('completed');
    expect(report.checks.filter((c) => c.threshold !== null && c.pass === false)).toEqual([]);
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
  }, 300_000);
});
