import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { loadScenario } from '../../src/scenarios/load-scenario.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { listenForRounds, notifyRound } from '../../src/runs/workers/round-wakeup.ts';
import { runWorker, type WorkerSummary } from '../../src/runs/workers/run-worker.ts';
import { startWorkerRun } from '../../src/runs/workers/start-worker-run.ts';
import { perFileDatabase, postgresUrl } from '../support/coordination-env.ts';
import { waitFor } from '../support/wait-for.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
// At most 12 PostgreSQL connections at once: two workers' stores and LISTEN connections (measured peak, with room).
perFileDatabase({ connections: 12 });

/*
 * The round barrier: a worker with nothing to claim waits for NOTIFY (a part staged, a round committed), with a
 * bounded fallback poll for what sends none.
 */

let database: BreakwaterDatabase;
let emulator: Emulator;
let dir: string;

beforeAll(async () => {
  database = await openDatabase({ url: postgresUrl() });
  emulator = await startEmulator({ profile: { seed: 15, latency: { minMs: 30, maxMs: 80 } } });
  dir = mkdtempSync(join(tmpdir(), 'bw-wakeup-'));
});
afterAll(async () => {
  await emulator.close();
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('listenForRounds', () => {
  it('wakes a wait on its run only, and a notification that came after the mark ends the next wait at once', async () => {
    const wakeup = await listenForRounds(postgresUrl());
    try {
      expect(wakeup.listening).toBe(true);
      let woken: string[] = [];
      const since = wakeup.mark();
      const onX = wakeup.wait('run-x', 60_000, since).then(() => woken.push('x'));
      const onAny = wakeup.wait(undefined, 60_000, since).then(() => woken.push('any'));
      await notifyRound(database, 'run-y');
      await onAny;
      // Run y's notification was handled (it woke the wait on any run) and did not end run x's.
      expect(woken).toEqual(['any']);
      await notifyRound(database, 'run-x');
      await onX;
      expect(woken).toEqual(['any', 'x']);

      // A notification between the mark and the wait (the caller was reading the parts) is not lost.
      woken = [];
      const mark = wakeup.mark();
      const anyAgain = wakeup.wait(undefined, 60_000, wakeup.mark());
      await notifyRound(database, 'run-z');
      await anyAgain;
      await wakeup.wait('run-z', 60_000, mark);
    } finally {
      await wakeup.close();
    }
  });

  it('a lost LISTEN connection is made again in the background: a wait during the gap is woken when it is back, and NOTIFY works again', async () => {
    const wakeup = await listenForRounds(postgresUrl());
    const admin = new pg.Client({ connectionString: postgresUrl() });
    await admin.connect();
    try {
      expect(wakeup.listening).toBe(true);
      // The server ends the listener's session (a restart, an idle-session killer, a proxy dropping it): this
      // process's only (test files in one process run one after another; workers of other tests are other processes).
      const killed = await admin.query(
        'select pg_terminate_backend(pid) from pg_stat_activity where application_name = $1',
        [`breakwater-worker-rounds ${process.pid}`],
      );
      expect(killed.rowCount).toBe(1);
      await waitFor(() => !wakeup.listening, 'the listener to notice its connection is gone', 30_000);
      // A wait during the gap, with a poll far longer than the test: only the reconnection can end it in time.
      let woken = false;
      const during = wakeup.wait('run-gap', 600_000, wakeup.mark()).then(() => {
        woken = true;
      });
      await waitFor(() => wakeup.listening, 'the LISTEN connection to be made again', 60_000);
      await waitFor(() => woken, 'the wait from the gap to be woken', 20_000);
      await during;
      // Listening again: a notification ends a new wait.
      const next = wakeup.wait('run-after', 600_000, wakeup.mark());
      await notifyRound(database, 'run-after');
      await next;
    } finally {
      await admin.end();
      await wakeup.close();
    }
  });

  it('without a server every wait is its (bounded) fallback poll', async () => {
    const wakeup = await listenForRounds('postgres://postgres@127.0.0.1:1/none', 1_000);
    expect(wakeup.listening).toBe(false);
    const t = Date.now();
    await wakeup.wait('r', 50, wakeup.mark());
    expect(Date.now() - t).toBeGreaterThanOrEqual(40);
    await wakeup.close();
  });
});

describe('two workers at the round barrier', () => {
  /** Reached only by a worker no NOTIFY woke. */
  const HANG_MS = 240_000;
  /** Longer than the test may run. */
  const BARRIER_POLL_MS = 600_000;

  it(
    'with a fallback poll longer than the test may run, both go round after round on NOTIFY and return once the run completes',
    async () => {
      const source = join(dir, 'scenario.yaml');
      writeFileSync(
        source,
        `
name: wakeup-drill
timeScale: 1
runtime:
  endpoints:
    - { id: primary, provider: openai, model: gpt-4o, emulator: openai, apiKey: sk-workers-primary-000000000004 }
  chains: { main: [primary] }
  concurrency: { limit: 2 }
agents:
  - { name: Kai, chain: main, tier: analysis, role: "You are Kai." }
  - { name: Yuna, chain: main, tier: analysis, role: "You are Yuna." }
rounds:
  count: 3
  items:
    - { id: I1, title: Item 1 }
emulator:
  seed: 15
`,
      );
      const { runId } = await startWorkerRun({
        scenario: loadScenario(source),
        scenarioSource: source,
        database,
        workers: 2,
        emulatorUrl: emulator.controlURL,
      });
      const summaries: WorkerSummary[] = [];
      const workers = ['w-a', 'w-b'].map((holder) =>
        runWorker({
          database,
          databaseUrl: postgresUrl(),
          runId,
          holder: `${holder}:0:0`,
          pollMs: BARRIER_POLL_MS,
        }).then((s) => summaries.push(s)),
      );
      // Only a NOTIFY can move a worker on at the barrier: its fallback poll outlasts the test, so a worker left asleep
      // there hangs the test until the deadline, however fast or slow the machine. The deadline only a hang reaches
      // (under load the first round alone took 19 s: the runs are correct, just slow; the old 30 s bound failed them).
      let hang: ReturnType<typeof setTimeout> | undefined;
      try {
        await Promise.race([
          Promise.all(workers),
          new Promise((_, reject) => {
            hang = setTimeout(
              () =>
                reject(
                  new Error(
                    `both workers had not returned after ${HANG_MS} ms: one is asleep at the barrier`,
                  ),
                ),
              HANG_MS,
            );
          }),
        ]);
      } finally {
        clearTimeout(hang);
      }
      const run = await createRunStore(database).getRun(runId);
      expect(run?.status).toBe('completed');
      expect(summaries.reduce((n, s) => n + s.turns, 0)).toBe(3 * 2);
    },
    HANG_MS + 60_000,
  );
});
