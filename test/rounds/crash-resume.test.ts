import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore, type RunStore } from '../../src/store/run-store.ts';
import { perFileDatabase, postgresUrl } from '../support/per-file-database.ts';
import { AGENTS, ITEMS, KILLS, mulberry32, ROUNDS, runOrKill, SCENARIO } from './crash-drill.ts';

/*
 * The crash test of issue 4 on the PostgreSQL server: `breakwater run` in a child process is killed with SIGKILL at
 * random points (≥ 20 times), and `breakwater resume` continues it each time. The emulator lives in this process, so
 * its record of every upstream call (with the Idempotency-Key header) outlives the kills. The same drill on the
 * embedded default is crash-resume-pglite.test.ts.
 */

// This file's own PostgreSQL database (test/support/per-file-database.ts).
perFileDatabase();

let emulator: Emulator;
let database: BreakwaterDatabase;
let store: RunStore;
let dir: string;

function cli(args: string[]): ChildProcess {
  return spawn(process.execPath, ['bin/breakwater.js', ...args], {
    cwd: join(import.meta.dirname, '..', '..'),
    env: { ...process.env, DATABASE_URL: postgresUrl(), BREAKWATER_LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 4, latency: { minMs: 40, maxMs: 120 } } });
  database = await openDatabase({ url: postgresUrl() });
  store = createRunStore(database);
  dir = mkdtempSync(join(tmpdir(), 'bw-crash-'));
  writeFileSync(join(dir, 'scenario.yaml'), SCENARIO);
});
afterAll(async () => {
  await database.close();
  await emulator.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('crash and resume', () => {
  it(`SIGKILLed ${KILLS}+ times at random points, every run finishes with one turn per (round, item, agent) and no committed work asked again`, async () => {
    const random = mulberry32(20261129);
    let kills = 0;
    const runs: string[] = [];
    const violations: string[] = [];
    // Runs follow each other until the kills are done: on a fast machine one run may finish before 20 kills.
    while (kills < KILLS && runs.length < 12) {
      const runId = `crash-${Date.now()}-${runs.length}`;
      runs.push(runId);
      const common = [
        '--emulator-url',
        emulator.controlURL,
        '--database-url',
        postgresUrl(),
        '--json',
        '--no-live',
      ];
      let started = false;
      let finished = false;
      for (let attempt = 0; attempt < 40 && !finished; attempt++) {
        // What is durable before this process starts: committed turns and memoized calls.
        const committed = new Set(
          (await store.listTurns(runId)).map((t) => `${runId}:${t.round}:${t.itemId}:${t.agent}`),
        );
        const memoized = new Set(
          (
            await database.db
              .selectFrom('call_results')
              .select('idempotency_key')
              .where('run_id', '=', runId)
              .execute()
          ).map((r) => r.idempotency_key),
        );
        const seqBefore = emulator.stats().totalCalls;
        const args = started
          ? ['resume', runId, ...common]
          : ['run', join(dir, 'scenario.yaml'), '--run-id', runId, ...common];
        // The CLI starts in about a second (bin/breakwater.js runs a cached bundle): kill points spread
        // over the start, the first rounds and the commits in between.
        const killAfter = kills < KILLS ? 900 + Math.floor(random() * 1_600) : undefined;
        const outcome = await runOrKill(cli(args), killAfter);
        started = started || (await store.getRun(runId)) !== undefined;
        if (outcome.killed) kills++;
        else {
          expect(outcome.stderr).toBe('');
          expect(outcome.code).toBe(0);
          finished = true;
        }
        for (const call of emulator.stats().calls.filter((c) => c.seq > seqBefore)) {
          const key = call.idempotencyKey ?? '';
          const turn = key.replace(/:call\d+$/, '');
          if (committed.has(turn)) violations.push(`committed turn ${turn} asked again (${key})`);
          if (memoized.has(key)) violations.push(`memoized call ${key} asked again`);
        }
      }
      expect(finished).toBe(true);
    }
    expect(kills).toBeGreaterThanOrEqual(KILLS);
    expect(violations).toEqual([]);
    for (const runId of runs) {
      const run = await store.getRun(runId);
      expect(run?.status).toBe('completed');
      expect(run?.currentRound).toBe(ROUNDS);
      const turns = await store.listTurns(runId);
      expect(turns).toHaveLength(ROUNDS * ITEMS * AGENTS.length);
      expect(new Set(turns.map((t) => `${t.round}:${t.itemId}:${t.agent}`)).size).toBe(turns.length);
      expect(turns.every((t) => t.outcome === 'answered' || t.outcome === 'fallback')).toBe(true);
    }
  }, 400_000);
});
