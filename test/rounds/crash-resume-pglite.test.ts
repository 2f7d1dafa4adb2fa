import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { AGENTS, ITEMS, KILLS, mulberry32, ROUNDS, runOrKill, SCENARIO } from './crash-drill.ts';

/*
 * The crash test of issue 4 on the embedded default (PGlite in a data folder): `breakwater run` in a child process
 * is killed with SIGKILL at random points (≥ 20 times, the first ones possibly during the folder's first start), and
 * `breakwater resume` continues it each time. The same drill on the PostgreSQL server is crash-resume.test.ts.
 */

let emulator: Emulator;
let dir: string;

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 4, latency: { minMs: 40, maxMs: 120 } } });
  dir = mkdtempSync(join(tmpdir(), 'bw-crash-pglite-'));
  writeFileSync(join(dir, 'scenario.yaml'), SCENARIO);
});
afterAll(async () => {
  await emulator.close();
  rmSync(dir, { recursive: true, force: true });
});

/** What is durable in a PGlite folder (opened while no child holds it): the run, its committed turns, its memo. */
async function durableIn(dataDir: string, runId: string) {
  const local = await openDatabase({ dataDir });
  try {
    const s = createRunStore(local);
    const exists = (await s.getRun(runId)) !== undefined;
    const committed = new Set(
      exists ? (await s.listTurns(runId)).map((t) => `${runId}:${t.round}:${t.itemId}:${t.agent}`) : [],
    );
    const memoized = new Set(
      (
        await local.db
          .selectFrom('call_results')
          .select('idempotency_key')
          .where('run_id', '=', runId)
          .execute()
      ).map((r) => r.idempotency_key),
    );
    return { exists, committed, memoized };
  } finally {
    await local.close();
  }
}

describe('crash and resume on the embedded default (PGlite)', () => {
  it(`a PGlite data folder survives ${KILLS}+ SIGKILLs at random points: every run resumes and completes with one turn per (round, item, agent), no committed work asked again`, async () => {
    const random = mulberry32(7);
    const dataDir = join(dir, 'pglite');
    const common = ['--emulator-url', emulator.controlURL, '--data-dir', dataDir, '--json', '--no-live'];
    let kills = 0;
    const runs: string[] = [];
    const violations: string[] = [];
    // Runs follow each other in the same folder until the kills are done: a fast machine finishes one run in
    // fewer than 20 kills.
    while (kills < KILLS && runs.length < 12) {
      const runId = `crash-pglite-${Date.now()}-${runs.length}`;
      runs.push(runId);
      let finished = false;
      let started = false;
      // What is durable before each attempt: read once after the previous attempt (one PGlite open per attempt).
      let durable: Awaited<ReturnType<typeof durableIn>> | undefined;
      for (let attempt = 0; attempt < 50 && !finished; attempt++) {
        const seqBefore = emulator.stats().totalCalls;
        const args = started
          ? ['resume', runId, ...common]
          : ['run', join(dir, 'scenario.yaml'), '--run-id', runId, ...common];
        // The folder's first start (unpacking the cached template, or initdb) takes a while: the very first kill
        // comes later, and may land in it (a marked first start is started over by the next open).
        const first = runs.length === 1 && attempt === 0;
        const killAfter = kills < KILLS ? (first ? 3_500 : 1_000) + Math.floor(random() * 2_000) : undefined;
        const child = spawn(process.execPath, ['bin/breakwater.js', ...args], {
          cwd: join(import.meta.dirname, '..', '..'),
          env: { ...process.env, DATABASE_URL: '', BREAKWATER_LOG_LEVEL: 'silent' },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let stdout = '';
        child.stdout?.on('data', (d) => (stdout += d));
        const outcome = await runOrKill(child, killAfter);
        for (const call of emulator.stats().calls.filter((c) => c.seq > seqBefore)) {
          const key = call.idempotencyKey ?? '';
          const turn = key.replace(/:call\d+$/, '');
          if (durable?.committed.has(turn)) violations.push(`committed turn ${turn} asked again (${key})`);
          if (durable?.memoized.has(key)) violations.push(`memoized call ${key} asked again`);
        }
        if (outcome.killed) durable = await durableIn(dataDir, runId);
        // A kill before the run row exists (e.g. during PGlite's first start) means the next attempt starts the
        // run again, in the same folder.
        started = started || outcome.killed === false || durable?.exists === true;
        if (outcome.killed) kills++;
        else {
          expect(outcome.stderr).toBe('');
          expect(outcome.code).toBe(0);
          expect(JSON.parse(stdout).status).toBe('completed');
          finished = true;
        }
      }
      expect(finished).toBe(true);
    }
    expect(kills).toBeGreaterThanOrEqual(KILLS);
    expect(violations).toEqual([]);
    const local = await openDatabase({ dataDir });
    try {
      const s = createRunStore(local);
      for (const runId of runs) {
        expect((await s.getRun(runId))?.status).toBe('completed');
        const turns = await s.listTurns(runId);
        expect(turns).toHaveLength(ROUNDS * ITEMS * AGENTS.length);
        expect(new Set(turns.map((t) => `${t.round}:${t.itemId}:${t.agent}`)).size).toBe(turns.length);
      }
    } finally {
      await local.close();
    }
  }, 420_000);
});
