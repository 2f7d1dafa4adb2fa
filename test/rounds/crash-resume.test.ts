import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/index.ts';
import {
  type BreakwaterDatabase,
  createRunStore,
  openDatabase,
  type RunStore,
} from '../../src/store/index.ts';

/*
 * The crash test of issue 4: `breakwater run` in a child process is killed with SIGKILL at random points
 * (≥ 20 times), and `breakwater resume` continues it each time. The emulator lives in this process, so its
 * record of every upstream call (with the Idempotency-Key header) outlives the kills.
 */

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const KILLS = 20;
const AGENTS = ['Kai', 'Yuna', 'Miso'];
const ITEMS = 8;
const ROUNDS = 5;

let emulator: Emulator;
let database: BreakwaterDatabase;
let store: RunStore;
let dir: string;

const SCENARIO = `
name: crash-drill
timeScale: 1
runtime:
  endpoints:
    - { id: primary, provider: openai, model: gpt-4o, emulator: openai, apiKey: sk-crash-primary-000000000001 }
    - { id: backup, provider: anthropic, model: claude-sonnet-4-6, emulator: anthropic, apiKey: sk-ant-crash-backup-0002 }
  chains: { main: [primary, backup] }
  concurrency: { limit: 3 }
agents:
${AGENTS.map((a) => `  - { name: ${a}, chain: main, tier: analysis, role: "You are ${a}.", memory: { desk: ${a.toLowerCase()} } }`).join('\n')}
rounds:
  count: ${ROUNDS}
  items:
${Array.from({ length: ITEMS }, (_, i) => `    - { id: I${i + 1}, title: Item ${i + 1} }`).join('\n')}
emulator:
  seed: 4
`;

/** Seeded so a failure can be replayed. */
function mulberry32(seed: number) {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function cli(args: string[]): ChildProcess {
  return spawn(process.execPath, ['bin/breakwater.js', ...args], {
    cwd: join(import.meta.dirname, '..', '..'),
    env: { ...process.env, DATABASE_URL, BREAKWATER_LOG_LEVEL: 'silent' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Runs the child until it exits, or kills it with SIGKILL after `killAfterMs`. Resolves true when killed. */
function runOrKill(
  child: ChildProcess,
  killAfterMs: number | undefined,
): Promise<{ killed: boolean; code: number | null; stderr: string }> {
  let stderr = '';
  child.stderr?.on('data', (d) => (stderr += d));
  child.stdout?.resume();
  return new Promise((resolve) => {
    const timer =
      killAfterMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    child.on('exit', (code, signal) => {
      if (timer) clearTimeout(timer);
      resolve({ killed: signal === 'SIGKILL', code, stderr });
    });
  });
}

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 4, latency: { minMs: 40, maxMs: 120 } } });
  database = await openDatabase({ url: DATABASE_URL });
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
        DATABASE_URL,
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
  it(`a PGlite data folder survives ${KILLS}+ SIGKILLs at random points: the run resumes and completes with one turn per (round, item, agent), no committed work asked again`, async () => {
    const random = mulberry32(7);
    const dataDir = join(dir, 'pglite');
    const runId = `crash-pglite-${Date.now()}`;
    const common = ['--emulator-url', emulator.controlURL, '--data-dir', dataDir, '--json', '--no-live'];
    let kills = 0;
    let finished = false;
    let started = false;
    const violations: string[] = [];
    for (let attempt = 0; attempt < 50 && !finished; attempt++) {
      const durable = attempt === 0 ? undefined : await durableIn(dataDir, runId);
      const seqBefore = emulator.stats().totalCalls;
      const args = started
        ? ['resume', runId, ...common]
        : ['run', join(dir, 'scenario.yaml'), '--run-id', runId, ...common];
      // PGlite's first start in a fresh folder takes a while (initdb, or unpacking the cached template):
      // the first kill comes later.
      const killAfter =
        kills < KILLS ? (attempt === 0 ? 3_500 : 1_500) + Math.floor(random() * 2_000) : undefined;
      const child = spawn(process.execPath, ['bin/breakwater.js', ...args], {
        cwd: join(import.meta.dirname, '..', '..'),
        env: { ...process.env, DATABASE_URL: '', BREAKWATER_LOG_LEVEL: 'silent' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      child.stdout?.on('data', (d) => (stdout += d));
      const outcome = await runOrKill(child, killAfter);
      // A kill before the run row exists (e.g. during PGlite's initdb) means the next attempt starts the run
      // again, in the same half-made folder.
      started = started || outcome.killed === false || (await durableIn(dataDir, runId)).exists;
      for (const call of emulator.stats().calls.filter((c) => c.seq > seqBefore)) {
        const key = call.idempotencyKey ?? '';
        const turn = key.replace(/:call\d+$/, '');
        if (durable?.committed.has(turn)) violations.push(`committed turn ${turn} asked again (${key})`);
        if (durable?.memoized.has(key)) violations.push(`memoized call ${key} asked again`);
      }
      if (outcome.killed) kills++;
      else {
        expect(outcome.stderr).toBe('');
        expect(outcome.code).toBe(0);
        expect(JSON.parse(stdout).status).toBe('completed');
        finished = true;
      }
    }
    expect(kills).toBeGreaterThanOrEqual(KILLS);
    expect(finished).toBe(true);
    expect(violations).toEqual([]);
    const local = await openDatabase({ dataDir });
    try {
      const s = createRunStore(local);
      expect((await s.getRun(runId))?.status).toBe('completed');
      const turns = await s.listTurns(runId);
      expect(turns).toHaveLength(ROUNDS * ITEMS * AGENTS.length);
      expect(new Set(turns.map((t) => `${t.round}:${t.itemId}:${t.agent}`)).size).toBe(turns.length);
    } finally {
      await local.close();
    }
  }, 420_000);
});
