import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../../src/report/report-types.ts';
import type { StoredRunConfig } from '../../src/runs/run-scenario.ts';
import { loadScenario } from '../../src/scenarios/load-scenario.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { loadParts, turnsByWorker } from '../../src/runs/workers/round-parts.ts';
import { startWorkerRun } from '../../src/runs/workers/start-worker-run.ts';
import { cleanEnv, runCli } from '../cli/run-cli.ts';
import {
  cleanPool,
  perFileDatabase,
  postgresUrl,
  REDIS_URL,
  redisKeyPrefix,
} from '../support/coordination-env.ts';

// This file's own PostgreSQL database and Redis key prefix (test/support/per-file-database.ts).
// At most 32 PostgreSQL connections at once: the CLI's workers and their parent (measured peak, with room).
perFileDatabase({ connections: 32 });

/*
 * `breakwater run <scenario> --workers N` as a user runs it: real CLI processes (the parent and its N workers), one
 * PostgreSQL database, one emulator over HTTP whose own record says how many calls were ever in flight at once.
 * morning-peak with 3 workers (a 2.5-minute run) is test/workers/morning-peak-workers.test.ts, where the one run is
 * judged against seed 000's checks and against one process's verdict.
 */

const oneLine = (stderr: string) => {
  expect(stderr.endsWith('\n')).toBe(true);
  expect(stderr.trimEnd().split('\n')).toHaveLength(1);
  expect(stderr).not.toMatch(/^\s+at /m);
};

const SMALL = `
name: workers-redis
timeScale: 1
runtime:
  endpoints:
    - { id: primary, provider: openai, model: gpt-4o, emulator: openai, apiKey: sk-workers-primary-000000000002 }
  chains: { main: [primary] }
  concurrency: { limit: 2 }
  agentDefaults: { maxWaitMs: 120000 }
agents:
${['Kai', 'Yuna', 'Miso', 'Ari'].map((a) => `  - { name: ${a}, chain: main, tier: analysis, role: "You are ${a}." }`).join('\n')}
rounds:
  count: 2
  items:
    - { id: I1, title: Item 1 }
    - { id: I2, title: Item 2 }
emulator:
  seed: 15
  latency: { minMs: 40, maxMs: 90 }
`;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'bw-cli-workers-'));
  writeFileSync(join(dir, 'scenario.yaml'), SMALL);
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

  it('an unreachable --coordination-url is one line naming the flag, without its password, and no run is stored', async () => {
    const runId = `unreachable-${process.pid}`;
    const run = await runCli(
      [
        'run',
        join(dir, 'scenario.yaml'),
        '--workers',
        '2',
        '--database-url',
        postgresUrl(),
        '--run-id',
        runId,
        '--coordination-url',
        'redis://:hunter2pw@127.0.0.1:1/0',
      ],
      cleanEnv(),
    );
    expect(run.code).toBe(1);
    oneLine(run.stderr);
    expect(run.stderr).toMatch(/^breakwater run: --coordination-url: Redis at redis:\/\/127\.0\.0\.1:1\/0/);
    expect(run.stderr + run.stdout).not.toContain('hunter2pw');
    const database = await openDatabase({ url: postgresUrl() });
    try {
      expect(await createRunStore(database).getRun(runId)).toBeUndefined();
    } finally {
      await database.close();
    }
  }, 60_000);

  it('--coordination-url redis://… : three workers share the run’s tokens on Redis (stored with the run, no password); the limit holds at the emulator', async () => {
    const runId = `redis-workers-${process.pid}`;
    const run = await runCli(
      [
        'run',
        join(dir, 'scenario.yaml'),
        '--workers',
        '3',
        '--database-url',
        postgresUrl(),
        '--run-id',
        runId,
        '--coordination-url',
        REDIS_URL,
        '--coordination-prefix',
        redisKeyPrefix(),
        '--json',
      ],
      cleanEnv(),
    );
    expect(run.stderr).not.toMatch(/error|Error/);
    expect(run.stderr).toContain(`tokens and endpoint health shared on Redis at ${REDIS_URL}`);
    expect(run.code).toBe(0);
    const report = JSON.parse(run.stdout.trim().split('\n').pop()!) as RunReport;
    expect(report.status).toBe('completed');
    expect(report.turns.total).toBe(2 * 2 * 4);
    expect(report.emulator!.maxInFlight).toBeLessThanOrEqual(2);
    // Which worker did what adds up to every turn (how the 8 parts fell among the three depends on timing).
    expect(Object.values(report.byWorker ?? {}).reduce((a, b) => a + b, 0)).toBe(report.turns.total);
    const database = await openDatabase({ url: postgresUrl() });
    try {
      const stored = (await createRunStore(database).getRun(runId))!.config as StoredRunConfig;
      expect(stored.workers!.coordination).toEqual({
        backend: 'redis',
        url: new URL(REDIS_URL).toString(),
        secret: false,
        keyPrefix: redisKeyPrefix(),
      });
      // Nothing of this run's pool on the store's PostgreSQL: the tokens were on Redis.
      const { rows } = await sql<{ pool: string }>`
        select pool from coordination_tokens where pool = ${stored.workers!.pool}
      `.execute(database.db);
      expect(rows).toEqual([]);
      await cleanPool({
        backend: 'redis',
        url: REDIS_URL,
        keyPrefix: redisKeyPrefix(),
        pool: stored.workers!.pool,
      });
    } finally {
      await database.close();
    }
  }, 180_000);

  it("a scenario's faults: (a fault proxy in front of a real endpoint) are refused in one line, not dropped", async () => {
    const faulted = join(dir, 'faulted.yaml');
    writeFileSync(
      faulted,
      `${SMALL.replace('primary, provider: openai, model: gpt-4o, emulator: openai,', 'primary, provider: openai, model: gpt-4o, baseURL: "http://127.0.0.1:9/v1",')}
faults:
  - { endpoint: primary, kind: overloaded, count: 2 }
`,
    );
    const runId = `faults-refused-${process.pid}`;
    const run = await runCli(
      ['run', faulted, '--workers', '2', '--database-url', postgresUrl(), '--run-id', runId],
      cleanEnv(),
    );
    expect(run.code).toBe(1);
    oneLine(run.stderr);
    expect(run.stderr).toContain("--workers does not go with the scenario's faults: (primary)");
    expect(run.stderr).toContain('run in one process');
    const database = await openDatabase({ url: postgresUrl() });
    try {
      expect(await createRunStore(database).getRun(runId)).toBeUndefined();
    } finally {
      await database.close();
    }
  }, 60_000);

  it('breakwater worker --coordination-url naming another server than its run’s is refused in one line, naming both', async () => {
    const database = await openDatabase({ url: postgresUrl() });
    const source = join(dir, 'scenario.yaml');
    const { runId } = await startWorkerRun({
      scenario: loadScenario(source),
      scenarioSource: source,
      database,
      workers: 1,
      emulatorUrl: 'http://127.0.0.1:9',
      coordination: { url: REDIS_URL, keyPrefix: redisKeyPrefix() },
    });
    try {
      const run = await runCli(
        [
          'worker',
          '--database-url',
          postgresUrl(),
          '--run-id',
          runId,
          '--coordination-url',
          'redis://:hunter2pw@127.0.0.1:6380/0',
        ],
        cleanEnv(),
      );
      expect(run.code).toBe(1);
      oneLine(run.stderr);
      expect(run.stderr).toMatch(
        new RegExp(
          `^breakwater worker: --coordination-url names redis://127\\.0\\.0\\.1:6380/0 but run ${runId} coordinates on Redis at `,
        ),
      );
      expect(run.stderr).not.toContain('hunter2pw');
      // The environment variable is the same as the flag.
      const viaEnv = await runCli(
        ['worker', '--database-url', postgresUrl(), '--run-id', runId],
        cleanEnv({ BREAKWATER_COORDINATION_URL: 'postgres://postgres@127.0.0.1:5432/other' }),
      );
      expect(viaEnv.code).toBe(1);
      oneLine(viaEnv.stderr);
      expect(viaEnv.stderr).toContain(`but run ${runId} coordinates on Redis at`);
    } finally {
      await createRunStore(database).setRunStatus(runId, 'failed');
      await database.close();
    }
  }, 60_000);

  it('the parent shows the live view from the run’s event log: every turn once, naming the worker that asked it (the worker holding its part)', async () => {
    const runId = `live-workers-${process.pid}`;
    const run = await runCli(
      [
        'run',
        join(dir, 'scenario.yaml'),
        '--workers',
        '3',
        '--database-url',
        postgresUrl(),
        '--run-id',
        runId,
      ],
      cleanEnv(),
    );
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    // stdout is a pipe: the live view's plain lines, then the report.
    const turnLines = [
      ...run.stdout.matchAll(/^\[\+[^\]]+\] (\w+) (.+?) \(round (\d+) (I\d+)\) on worker (\S+)$/gm),
    ].map((m) => ({ agent: m[1]!, outcome: m[2]!, round: Number(m[3]), item: m[4]!, worker: m[5]! }));
    expect(turnLines).toHaveLength(2 * 2 * 4);
    expect(new Set(turnLines.map((t) => `${t.round}|${t.item}|${t.agent}`)).size).toBe(2 * 2 * 4);
    expect(run.stdout).toMatch(/round 2 committed \(8 turns\)/);
    // The workers' own per-turn lines are not relayed as well (they would say it twice).
    expect(run.stdout).not.toMatch(/^worker \S+ {2}run /m);
    const database = await openDatabase({ url: postgresUrl() });
    try {
      // Which worker each line names is the one that holds (and staged) that agent's part of that round.
      for (const round of [1, 2]) {
        const parts = await loadParts(database, runId, round);
        for (const t of turnLines.filter((x) => x.round === round))
          expect(t.worker).toBe(parts.find((p) => p.agent === t.agent)!.holder);
      }
      // And the report's turns by worker agree with the lines.
      const byWorker = await turnsByWorker(database, runId);
      const fromLines: Record<string, number> = {};
      for (const t of turnLines) fromLines[t.worker] = (fromLines[t.worker] ?? 0) + 1;
      expect(fromLines).toEqual(byWorker);
      for (const [worker, n] of Object.entries(byWorker)) expect(run.stdout).toContain(`  ${worker}  ${n}`);
    } finally {
      await database.close();
    }
  }, 180_000);
});
