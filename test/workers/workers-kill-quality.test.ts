import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Emulator } from '../../src/emulator/emulator-server.ts';
import type { StoredWorkersConfig } from '../../src/runs/run-scenario.ts';
import { loadScenario } from '../../src/scenarios/load-scenario.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { loadParts } from '../../src/runs/workers/round-parts.ts';
import { startWorkerRun } from '../../src/runs/workers/start-worker-run.ts';
import {
  perFileDatabase,
  cleanPool,
  postgresUrl,
  redisKeyPrefix,
  REDIS_URL,
} from '../support/coordination-env.ts';
import { childScript } from '../support/test-child.ts';
import { waitFor } from '../support/wait-for.ts';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
// At most 36 PostgreSQL connections at once: three workers and the test at their peak (measured peak, with room).
perFileDatabase({ connections: 36 });

/*
 * A lost worker costs its in-flight calls, not the run's quality: three real worker processes on a scaled clock
 * (timeScale 15, the agents' default max wait of 10 simulated s = 0.67 real s), a breaker that opens in round 1
 * (its shared health row outlives it in the pool), one worker killed with SIGKILL mid-round 2. Its global tokens
 * stay held on the backend for the lease TTL (1.5 real s = 22 simulated s, longer than any max wait); the
 * survivors wait for them as one process waits for its own tokens, and take over its agents. The run's degraded
 * turns stay within 2 of the same run uninterrupted, on PostgreSQL and on Redis; no memoized call is answered twice.
 */

const CHILD = childScript(fileURLToPath(new URL('./worker-child.ts', import.meta.url)));
const AGENTS = ['Kai', 'Yuna', 'Miso', 'Ari', 'Bo', 'Cy', 'Dee', 'Eli'];
const ITEMS = 12;
const ROUNDS = 3;
const TURNS = AGENTS.length * ITEMS * ROUNDS;

const SCENARIO = `
name: workers-kill-quality
timeScale: 15
runtime:
  endpoints:
    - { id: primary, provider: openai, model: gpt-4o, emulator: openai, apiKey: sk-kill-quality-primary-0001, limits: { rpm: 120, tpm: 400000 } }
    - { id: backup, provider: anthropic, model: claude-sonnet-4-6, emulator: anthropic, apiKey: sk-ant-kill-quality-backup-02, limits: { rpm: 120, tpm: 400000 } }
  chains: { main: [primary, backup] }
  concurrency: { limit: 3 }
agents:
${AGENTS.map((a) => `  - { name: ${a}, chain: main, tier: analysis, role: "You are ${a}." }`).join('\n')}
rounds:
  count: ${ROUNDS}
  items:
${Array.from({ length: ITEMS }, (_, i) => `    - { id: I${i + 1}, title: Item ${i + 1} }`).join('\n')}
emulator:
  seed: 15
  latency: { minMs: 300, maxMs: 900 }
`;

let dir: string;
let database: BreakwaterDatabase;
const children: ChildProcess[] = [];
const emulators: Emulator[] = [];
const pools: StoredWorkersConfig[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'bw-kill-quality-'));
  writeFileSync(join(dir, 'scenario.yaml'), SCENARIO);
  database = await openDatabase({ url: postgresUrl() });
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  for (const w of pools)
    await cleanPool(
      w.coordination?.backend === 'redis'
        ? { backend: 'redis', url: REDIS_URL, keyPrefix: w.coordination.keyPrefix!, pool: w.pool }
        : { backend: 'postgres', url: postgresUrl(), pool: w.pool },
    );
  for (const e of emulators) await e.close();
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

type Worker = WorkerProcess;

function startWorker(runId: string): Worker {
  return spawnWorker(CHILD, postgresUrl(), runId, children);
}

/** Polls a store read until it holds, bounded like `waitFor`. */
async function until(check: () => Promise<boolean>, what: string, maxMs = 120_000): Promise<void> {
  const deadline = Date.now() + maxMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`waited ${maxMs} ms for ${what}; it never happened`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** Runs the scenario over three workers; with `kill`, SIGKILLs the worker holding an unstaged part of round 2. */
async function run(
  coordination: { url: string; keyPrefix?: string } | undefined,
  kill: boolean,
): Promise<{ degraded: number; repeated: string[]; survivorsErr: string[] }> {
  const source = join(dir, 'scenario.yaml');
  const started = await startWorkerRun({
    scenario: loadScenario(source),
    scenarioSource: source,
    database,
    workers: 3,
    leaseTtlMs: 1_500,
    ...(coordination ? { coordination } : {}),
  });
  pools.push(started.workers);
  const emulator = started.emulator!;
  emulators.push(emulator);
  // The primary's breaker opens in round 1 (three 429s in a row; each falls back to the backup): its OPEN travels to the pool and
  // stays in the pool's stored health, which every later round's runtime reads when it joins.
  emulator.addFault({ kind: 'rate_limit', match: { flavor: 'openai' }, count: 3, retryAfterMs: 1_000 });
  const { runId } = started;
  const team = Array.from({ length: 3 }, () => startWorker(runId));
  let victim: Worker | undefined;
  if (kill) {
    await until(async () => {
      const open = (await loadParts(database, runId, 2)).find((p) => !p.done);
      if (!open) return false;
      victim = team.find((w) => w.child.pid === Number(open.holder.split(':')[1]));
      return victim !== undefined;
    }, 'a worker to hold an unstaged part of round 2');
    victim!.child.kill('SIGKILL');
    await victim!.exited;
  }
  const survivors = team.filter((w) => w !== victim);
  await Promise.race([
    Promise.all(survivors.map((w) => w.exited)),
    waitFor(() => false, 'the workers to finish the run', 180_000).catch(() => {}),
  ]);
  const stored = await createRunStore(database).getRun(runId);
  expect(stored?.status).toBe('completed');
  const { rows } = await sql<{ n: string; degraded: string }>`
    select count(*) as n, count(*) filter (where outcome = 'degraded') as degraded from turns where run_id = ${runId}
  `.execute(database.db);
  expect(Number(rows[0]!.n)).toBe(TURNS);
  // Every memoized call was answered once upstream, by the emulator's own record.
  const memo = await database.db
    .selectFrom('call_results')
    .select('idempotency_key')
    .where('run_id', '=', runId)
    .execute();
  const answered = new Map<string, number>();
  for (const c of emulator.stats().calls)
    if (c.status === 200 && c.idempotencyKey)
      answered.set(c.idempotencyKey, (answered.get(c.idempotencyKey) ?? 0) + 1);
  return {
    degraded: Number(rows[0]!.degraded),
    repeated: memo.map((m) => m.idempotency_key).filter((k) => (answered.get(k) ?? 0) > 1),
    survivorsErr: survivors.map((w) => w.stderr).filter((s) => s !== ''),
  };
}

describe.each([
  { name: 'PostgreSQL', coordination: undefined },
  { name: 'Redis', coordination: { url: REDIS_URL, keyPrefix: redisKeyPrefix() } },
])('three workers on a scaled clock, tokens and health on $name', ({ coordination }) => {
  it('one worker killed mid-round degrades at most 2 turns more than the run uninterrupted; no call is paid twice', async () => {
    const whole = await run(coordination, false);
    const killed = await run(coordination, true);
    expect(whole.survivorsErr).toEqual([]);
    expect(killed.survivorsErr).toEqual([]);
    expect(whole.repeated).toEqual([]);
    expect(killed.repeated).toEqual([]);
    // The uninterrupted run is itself judged like one process: nothing degrades where a healthy backup exists.
    expect(whole.degraded).toBeLessThanOrEqual(2);
    expect(killed.degraded).toBeLessThanOrEqual(whole.degraded + 2);
  }, 420_000);
});
