import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createScaledClock } from '../../src/clock/scaled-clock.ts';
import { startEmulator } from '../../src/emulator/emulator-server.ts';
import type { RunReport } from '../../src/report/report-types.ts';
import { buildRunReport } from '../../src/report/run-report.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { runCli } from '../cli/run-cli.ts';
import { recordRun, testEndpoint, writeRecordedRun } from './record-run.ts';

/*
 * `breakwater report` and `breakwater runs` as child processes (`node bin/breakwater.js …`), reading a
 * PGlite folder into which a real recorded run (agents against the emulator) was written.
 */

let dir: string;
let dataDir: string;
let expected: RunReport;
const T0 = Date.parse('2026-08-17T07:00:00+09:00');

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'breakwater-report-cli-'));
  dataDir = join(dir, 'store');
  const clock = createScaledClock({ origin: T0, scale: 20 });
  const emulator = await startEmulator({
    clock,
    profile: {
      seed: 3,
      latency: { minMs: 100, maxMs: 300 },
      faults: [{ kind: 'rate_limit', match: { flavor: 'anthropic' }, count: 2, retryAfterMs: 1_000 }],
    },
  });
  try {
    const recorded = await recordRun({
      runId: 'cli-run-1',
      scenario: 'report-cli',
      emulator,
      clock,
      config: {
        endpoints: [
          testEndpoint(emulator, 'sonnet', 'anthropic', 'claude-sonnet-4-6'),
          testEndpoint(emulator, 'mini', 'openai', 'gpt-4o-mini'),
        ],
        chains: { premium: ['sonnet', 'mini'], light: ['mini', 'sonnet'] },
      },
      agents: [
        { name: 'Kai', tier: 'analysis', chain: 'premium' },
        { name: 'Yuna', tier: 'analysis', chain: 'premium' },
        { name: 'Rex', tier: 'ops', chain: 'light' },
      ],
      items: ['urgent-1', 'agenda-1'],
      rounds: 2,
    });
    const database = await openDatabase({ dataDir });
    try {
      const store = createRunStore(database);
      const run = await writeRecordedRun(store, recorded);
      expected = buildRunReport(run, recorded.events, { turns: await store.listTurns(run.runId) });
      await store.createRun({
        runId: 'cli-run-2',
        scenario: 'morning-peak',
        config: { policy: 'status-quo' },
        totalRounds: 15,
        machineVersion: 'agent@test',
      });
      await store.setRunStatus('cli-run-2', 'interrupted');
    } finally {
      await database.close();
    }
  } finally {
    await emulator.close();
  }
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('breakwater report', () => {
  it('--json prints the same report object buildRunReport gives in-process, and exits 0', async () => {
    const run = await runCli(['report', 'cli-run-1', '--json', '--data-dir', dataDir]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const printed = JSON.parse(run.stdout) as RunReport;
    expect(printed).toEqual(JSON.parse(JSON.stringify(expected)));
    expect(printed).toMatchObject({ runId: 'cli-run-1', status: 'completed', policy: 'breakwater' });
    expect(printed.turns).toMatchObject({ total: 12, failed: 0, placeholders: 0 });
    expect(printed.checks.map((c) => c.id)).toEqual(
      expect.arrayContaining([
        'max-in-flight',
        'sonnet-calls-per-hour',
        'failure-rate',
        'analysis-success-rate',
      ]),
    );
    // The two injected 429s were received and counted.
    expect(printed.checks.find((c) => c.id === 'rate-limited')?.value).toBe(2);
  });

  it('prints the table: one row per check with value, threshold and PASS/FAIL, and a verdict', async () => {
    const run = await runCli(['report', 'cli-run-1', '--data-dir', dataDir, '--time-zone', 'Asia/Seoul']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const lines = run.stdout.trimEnd().split('\n');
    expect(lines[0]).toBe(
      'run cli-run-1  scenario report-cli  policy breakwater  status completed  rounds 2/2',
    );
    expect(lines[1]).toMatch(/^window 2026-08-17 07:00:\d\d → 2026-08-17 07:\d\d:\d\d Asia\/Seoul/);
    expect(run.stdout).toMatch(/^max LLM calls in flight in any second\s+[0-3]\s+≤ 3\s+PASS/m);
    expect(run.stdout).toMatch(/^failure rate \(failed ÷ LLM turns\)\s+0\.0 %\s+≤ 2\.0 %\s+PASS/m);
    expect(run.stdout).toMatch(/^429 rate limits received\s+2\s+—\s+info\s+of \d+ upstream calls$/m);
    expect(lines.at(-1)).toBe('result PASS — every check passed');
  });

  it('an unknown run: one line on stderr naming the store and what to do, exit 1', async () => {
    const run = await runCli(['report', 'no-such-run', '--data-dir', dataDir]);
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toBe(
      `breakwater report: no run "no-such-run" in ${dataDir}; \`breakwater runs\` lists the stored runs ` +
        '(choose the store with --data-dir or --database-url)\n',
    );
  });

  it('a half-given peak window is refused in one line, before the store is opened', async () => {
    const run = await runCli([
      'report',
      'cli-run-1',
      '--data-dir',
      dataDir,
      '--peak-from',
      '2026-08-17T07:00:00+09:00',
    ]);
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(
      'breakwater report: give both --peak-from and --peak-to, or neither (the whole run)\n',
    );
  });
});

describe('breakwater runs', () => {
  it('--json prints every run, newest first, with status and rounds', async () => {
    const run = await runCli(['runs', '--json', '--data-dir', dataDir]);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    const runs = JSON.parse(run.stdout) as Array<Record<string, unknown>>;
    expect(runs.map((r) => r.runId)).toEqual(['cli-run-2', 'cli-run-1']);
    expect(runs[0]).toMatchObject({
      status: 'interrupted',
      scenario: 'morning-peak',
      policy: 'status-quo',
      roundsCommitted: 0,
      totalRounds: 15,
    });
    expect(runs[1]).toMatchObject({
      status: 'completed',
      roundsCommitted: 2,
      totalRounds: 2,
      policy: 'breakwater',
    });
  });

  it('prints a table, filters by status, and reports an absent store without creating it', async () => {
    const table = await runCli([
      'runs',
      '--data-dir',
      dataDir,
      '--status',
      'completed',
      '--time-zone',
      'UTC',
    ]);
    expect(table.code).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^run\s+scenario\s+status\s+rounds\s+policy\s+created \(UTC\)$/);
    expect(lines).toHaveLength(2);
    expect(lines[1]).toMatch(
      /^cli-run-1\s+report-cli\s+completed\s+2\/2\s+breakwater\s+\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/,
    );

    const nowhere = join(dir, 'nothing-here');
    const empty = await runCli(['runs', '--data-dir', nowhere]);
    expect(empty.code).toBe(0);
    expect(empty.stdout).toBe(`no runs in ${nowhere} (no store there yet)\n`);
    expect(existsSync(nowhere)).toBe(false);
  });
});
