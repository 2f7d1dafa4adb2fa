import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { SCENARIO } from '../rounds/crash-drill.ts';
import { type CrashBackend, pgliteBackend, postgresBackend } from './crash-harness.ts';
import {
  type DrillContext,
  note,
  SCENARIO_FILE,
  singleProcessDrill,
  uninterrupted,
  workersDrill,
} from './crash-drills.ts';
import { shareOfConnections } from '../support/per-file-database.ts';

/*
 * The crash suite of issue 42. After every kill -9 and every resume: 0 committed turns lost or changed (the
 * uninterrupted run's turns), 0 memoized or committed calls asked upstream again (the emulator's record), exactly
 * one `turn.completed` per committed turn and one `round.committed` per committed round, degraded turns within +2
 * of the uninterrupted run. `npm test` runs a short form (few kills); `npm run test:crash` the long form
 * (BREAKWATER_CRASH_KILLS=24 per backend: PGlite in one process; PostgreSQL half in one process, half `--workers 3`).
 */

// It makes its PostgreSQL databases itself (it terminates their connections); at most 30 connections at once:
// `run --workers 3` and the workers that finish the run (measured peak, with room).
shareOfConnections(30);

const KILLS = Number(process.env.BREAKWATER_CRASH_KILLS ?? 2);
const LONG = KILLS > 2;
const SEED = Number(process.env.BREAKWATER_CRASH_SEED ?? 42);

let emulator: Emulator;
let dir: string;
const notes: string[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 4, latency: { minMs: 40, maxMs: 120 } } });
  dir = mkdtempSync(join(tmpdir(), 'bw-crash-suite-'));
  writeFileSync(SCENARIO_FILE(dir), SCENARIO);
});
afterAll(async () => {
  await emulator.close();
  rmSync(dir, { recursive: true, force: true });
  // The counts the suite's note quotes.
  for (const line of notes) process.stdout.write(`[crash-suite] ${line}\n`);
});

async function context(backend: CrashBackend, workers?: number): Promise<DrillContext> {
  const base = { backend, emulator, scenarioFile: SCENARIO_FILE(dir) };
  const runId = `uninterrupted-${backend.name}-${workers ?? 1}-${SEED}`;
  return { ...base, baseline: await uninterrupted(base, runId, workers) };
}

describe('crash suite', () => {
  it(
    `PGlite, one process: ${KILLS} kill -9s (timed, after a commit, during restore) lose, change, repeat and duplicate nothing`,
    async () => {
      const backend = pgliteBackend(dir);
      const c = await context(backend);
      const counts = await singleProcessDrill(c, KILLS, SEED);
      notes.push(note('pglite one process', counts));
      expect(counts.violations).toEqual([]);
      expect(counts.kills).toBeGreaterThanOrEqual(KILLS);
    },
    LONG ? 1_800_000 : 300_000,
  );

  it(
    `PostgreSQL, one process and --workers 3: ${KILLS} faults (kill -9 of run/resume, a worker, the parent; connections terminated) lose, change, repeat and duplicate nothing`,
    async () => {
      const backend = await postgresBackend();
      try {
        const c = await context(backend);
        const single = await singleProcessDrill(c, Math.ceil(KILLS / 2), SEED + 1);
        notes.push(note('postgres one process', single));
        const workers = await workersDrill(await context(backend, 3), Math.floor(KILLS / 2), SEED + 2);
        notes.push(note('postgres --workers 3', workers));
        expect(single.violations).toEqual([]);
        expect(workers.violations).toEqual([]);
        expect(single.kills + workers.kills).toBeGreaterThanOrEqual(KILLS);
      } finally {
        await backend.close();
      }
    },
    LONG ? 3_600_000 : 600_000,
  );
});
