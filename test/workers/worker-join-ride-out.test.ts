import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Emulator } from '../../src/emulator/emulator-server.ts';
import { loadScenario } from '../../src/scenarios/load-scenario.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { isTransientJoinFailure, runWorker } from '../../src/runs/workers/run-worker.ts';
import { startWorkerRun } from '../../src/runs/workers/start-worker-run.ts';
import { perFileDatabase, postgresUrl } from '../support/coordination-env.ts';

perFileDatabase();

/*
 * A worker whose coordination connections are terminated while it joins a run (`pg_terminate_backend`, the server
 * stays up) joins it once they are back, and finishes it; it once put the run among the ones it cannot join, for
 * good. Deterministic: the test holds the migrator's advisory lock (every coordination connect takes it), so each
 * attempt of the join's coordination check waits there and is terminated, until the check gives up; then the lock
 * is let go. Nothing of breakwater is replaced.
 */

/** kysely's PostgreSQL migration lock (node_modules/kysely/dist/esm/dialect/postgres/postgres-adapter.js). */
const MIGRATION_LOCK_ID = '3853314791062309107';

const SCENARIO = `
name: worker-join-ride-out
timeScale: 15
runtime:
  endpoints:
    - { id: primary, provider: openai, model: gpt-4o, emulator: openai, apiKey: emu-join-ride-out }
  chains: { main: [primary] }
agents:
  - { name: Kai, chain: main, role: "You are Kai." }
rounds:
  count: 1
  items: [{ id: I1, title: Item 1 }]
emulator:
  acceptAnyKey: true
`;

let database: BreakwaterDatabase;
let admin: pg.Client;
let dir: string;
let emulator: Emulator | undefined;

beforeAll(async () => {
  database = await openDatabase({ url: postgresUrl() });
  admin = new pg.Client({ connectionString: postgresUrl() });
  await admin.connect();
  dir = mkdtempSync(join(tmpdir(), 'bw-join-ride-out-'));
});
afterAll(async () => {
  await emulator?.close();
  await admin.end();
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

async function until(check: () => Promise<boolean>, what: string, maxMs: number): Promise<void> {
  const deadline = Date.now() + maxMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`waited ${maxMs} ms for ${what}; it never happened`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

describe('a worker whose coordination connections are cut while it joins', () => {
  it('joins once they are back and finishes the run (the run is not skipped for good)', async () => {
    const source = join(dir, 'scenario.yaml');
    writeFileSync(source, SCENARIO);
    const started = await startWorkerRun({
      scenario: loadScenario(source),
      scenarioSource: source,
      database,
      workers: 1,
    });
    emulator = started.emulator;
    const lines: string[] = [];
    const logger = pino(
      { level: 'warn' },
      new Writable({
        write(chunk, _enc, done) {
          lines.push(String(chunk));
          done();
        },
      }),
    );
    await admin.query(`select pg_advisory_lock(${MIGRATION_LOCK_ID})`);
    const stop = new AbortController();
    // Working on any run (no runId): the mode in which a failed join used to skip the run for good.
    const working = runWorker({
      database,
      databaseUrl: postgresUrl(),
      holder: 'w-join:0:0',
      logger,
      signal: stop.signal,
    }).then(
      () => undefined,
      (e: unknown) => e,
    );
    const cut = new Set<number>();
    const failedOnce = () => lines.some((l) => l.includes('could not join the run'));
    // Every attempt of the join's coordination check is terminated in its migration until the check gives up.
    while (!failedOnce()) {
      let pid = 0;
      await until(
        async () => {
          if (failedOnce()) return true;
          const { rows } = await admin.query<{ pid: number }>(
            `select pid from pg_stat_activity
             where datname = current_database() and application_name = 'breakwater-coordination'
               and wait_event_type = 'Lock' and query like '%pg_advisory_lock%'`,
          );
          pid = rows.find((r) => !cut.has(r.pid))?.pid ?? 0;
          return pid !== 0;
        },
        'a join attempt waiting on the migration lock, or the join to give up',
        60_000,
      );
      if (pid === 0) break;
      await admin.query('select pg_terminate_backend($1)', [pid]);
      cut.add(pid);
    }
    expect(cut.size).toBeGreaterThan(1);
    await admin.query(`select pg_advisory_unlock(${MIGRATION_LOCK_ID})`);
    const store = createRunStore(database);
    await until(
      async () => (await store.getRun(started.runId))?.status === 'completed',
      'the worker to finish the run',
      120_000,
    );
    stop.abort(new Error('test done'));
    await working;
    expect(lines.join('')).not.toMatch(/cannot join this run|"level":(50|60)/);
  }, 240_000);
});

describe('what a failed join is', () => {
  it('a lost connection is tried again; a refusal is final', () => {
    const cutError = Object.assign(new Error('terminating connection due to administrator command'), {
      code: '57P01',
    });
    expect(isTransientJoinFailure(new Error('coordination check failed', { cause: cutError }))).toBe(true);
    const refused = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:1'), { code: 'ECONNREFUSED' });
    expect(isTransientJoinFailure(new Error('coordination check failed', { cause: refused }))).toBe(false);
    expect(isTransientJoinFailure(new Error('run "r" was not started for workers'))).toBe(false);
  });
});
