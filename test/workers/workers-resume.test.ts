import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunReport } from '../../src/report/report-types.ts';
import type { StoredRunConfig } from '../../src/runs/run-scenario.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { cleanEnv, finished, runCli, spawnCli, waitForOutput } from '../cli/run-cli.ts';
import { perFileDatabase, postgresUrl } from '../support/coordination-env.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
// At most 22 PostgreSQL connections at once: the CLI's workers and their parent (measured peak, with room).
perFileDatabase({ connections: 22 });

/*
 * `breakwater resume <run-id>` of a run started with `--workers`: the interrupted run goes on with worker processes
 * from its last committed round, and ends with every turn asked and committed once.
 */

const AGENTS = ['Kai', 'Yuna', 'Miso'];
const SCENARIO = `
name: workers-resume
timeScale: 1
runtime:
  endpoints:
    - { id: primary, provider: openai, model: gpt-4o, emulator: openai, apiKey: sk-workers-resume-000000000001 }
  chains: { main: [primary] }
  concurrency: { limit: 3 }
  agentDefaults: { maxWaitMs: 120000 }
agents:
${AGENTS.map((a) => `  - { name: ${a}, chain: main, tier: analysis, role: "You are ${a}." }`).join('\n')}
rounds:
  count: 4
  items:
    - { id: I1, title: Item 1 }
    - { id: I2, title: Item 2 }
emulator:
  seed: 31
  latency: { minMs: 300, maxMs: 500 }
`;

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'bw-workers-resume-'));
  writeFileSync(join(dir, 'scenario.yaml'), SCENARIO);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('breakwater resume of a run started with --workers', () => {
  it('an interrupted run is kept interrupted, and resume goes on with workers to the end: every turn once', async () => {
    const runId = `workers-resume-${process.pid}`;
    const child = spawnCli(
      [
        'run',
        join(dir, 'scenario.yaml'),
        '--workers',
        '2',
        '--database-url',
        postgresUrl(),
        '--run-id',
        runId,
        '--no-stdin',
      ],
      cleanEnv(),
    );
    const first = finished(child);
    await waitForOutput(child, /round 1 committed/, 120_000);
    child.kill('SIGINT');
    const stopped = await first;
    expect(stopped.code).toBe(130);
    expect(stopped.stderr).toContain(
      `run ${runId} interrupted; continue it with \`breakwater resume ${runId}\``,
    );
    const database = await openDatabase({ url: postgresUrl() });
    try {
      const store = createRunStore(database);
      const interrupted = (await store.getRun(runId))!;
      expect(interrupted.status).toBe('interrupted');
      expect(interrupted.currentRound).toBeGreaterThanOrEqual(1);
      expect(interrupted.currentRound).toBeLessThan(4);

      // No --workers: the stored run says it was spread over 2, and it goes on so.
      const resumed = await runCli(
        ['resume', runId, '--database-url', postgresUrl(), '--json', '--no-stdin'],
        cleanEnv(),
      );
      expect(resumed.stderr).toContain(`resumed after round ${interrupted.currentRound}`);
      expect(resumed.stderr).toContain('2 workers on postgres');
      expect(resumed.code).toBe(0);
      const report = JSON.parse(resumed.stdout.trim().split('\n').pop()!) as RunReport;
      expect(report.status).toBe('completed');
      expect(report.allPassed).toBe(true);
      const turns = await store.listTurns(runId);
      expect(turns).toHaveLength(4 * 2 * AGENTS.length);
      expect(new Set(turns.map((t) => `${t.round}|${t.itemId}|${t.agent}`)).size).toBe(turns.length);
      // The round cut by the stop was asked again, not committed with the stopped workers' cancelled turns.
      expect(turns.filter((t) => t.outcome !== 'answered').map((t) => [t.round, t.agent, t.answer])).toEqual(
        [],
      );
      const config = (await store.getRun(runId))!.config as StoredRunConfig;
      expect(config.workers!.count).toBe(2);
      expect(config.workers!.clockOrigin).toBeGreaterThanOrEqual(config.origin);
      // The resumed run's clock goes on from where the first stopped: nothing after it is stamped earlier.
      const events = await store.readEvents(runId);
      const starts = events.filter((e) => e.type === 'run.started');
      expect(starts).toHaveLength(2);
      const resumedAt = starts[1]!.at;
      const before = events.filter((e) => e.seq < starts[1]!.seq);
      expect(Math.max(...before.map((e) => e.at))).toBeLessThanOrEqual(resumedAt);
      expect(events.filter((e) => e.seq > starts[1]!.seq && e.at < resumedAt)).toEqual([]);

      // A completed run resumed again only prints its report.
      const again = await runCli(
        ['resume', runId, '--database-url', postgresUrl(), '--json', '--no-stdin'],
        cleanEnv(),
      );
      expect(again.code).toBe(0);
      expect((JSON.parse(again.stdout.trim().split('\n').pop()!) as RunReport).turns.total).toBe(
        turns.length,
      );
    } finally {
      await database.close();
    }
  }, 300_000);
});
