import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
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
import { perFileDatabase, cleanPool, postgresUrl } from '../support/coordination-env.ts';
import { childScript } from '../support/test-child.ts';
import { waitFor } from '../support/wait-for.ts';
import { spawnWorker, type WorkerProcess } from '../support/worker-process.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
// At most 32 PostgreSQL connections at once: three workers and the test (measured peak, with room).
perFileDatabase({ connections: 32 });

/*
 * Every database connection of three worker processes terminated once mid-round (`pg_terminate_backend`, the
 * server stays up), their store and their coordination (the run's pool on the same PostgreSQL): the workers
 * reconnect and finish the run themselves; no call is answered twice upstream (the emulator's own record), and
 * a call answered while its memo write was cut is written on the next connection, not asked again.
 */

const CHILD = childScript(fileURLToPath(new URL('./worker-child.ts', import.meta.url)));
const AGENTS = ['Kai', 'Yuna', 'Miso', 'Ari', 'Bo', 'Cy'];
const ITEMS = 6;
const ROUNDS = 3;

const SCENARIO = `
name: workers-db-terminate
timeScale: 15
runtime:
  endpoints:
    - { id: primary, provider: openai, model: gpt-4o, emulator: openai, apiKey: sk-db-terminate-primary-0001 }
    - { id: backup, provider: anthropic, model: claude-sonnet-4-6, emulator: anthropic, apiKey: sk-ant-db-terminate-backup-02 }
  chains: { main: [primary, backup] }
  concurrency: { limit: 3 }
agents:
${AGENTS.map((a) => `  - { name: ${a}, chain: main, tier: analysis, role: "You are ${a}." }`).join('\n')}
rounds:
  count: ${ROUNDS}
  items:
${Array.from({ length: ITEMS }, (_, i) => `    - { id: I${i + 1}, title: Item ${i + 1} }`).join('\n')}
emulator:
  seed: 21
  latency: { minMs: 1500, maxMs: 3000 }
`;

/** The workers' connections carry this name (the URL's `application_name`), so only theirs are terminated. */
const TAG = `bw-term-${randomBytes(3).toString('hex')}`;
const TAGGED_URL = () => {
  const u = new URL(postgresUrl());
  u.searchParams.set('application_name', TAG);
  return u.toString();
};

let dir: string;
let database: BreakwaterDatabase;
const children: ChildProcess[] = [];
let emulator: Emulator | undefined;
let pool: StoredWorkersConfig | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'bw-db-terminate-'));
  writeFileSync(join(dir, 'scenario.yaml'), SCENARIO);
  database = await openDatabase({ url: postgresUrl() });
});

afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  if (pool) await cleanPool({ backend: 'postgres', url: postgresUrl(), pool: pool.pool });
  await emulator?.close();
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

type Worker = WorkerProcess;

function startWorker(runId: string): Worker {
  return spawnWorker(CHILD, TAGGED_URL(), runId, children);
}

describe('three workers whose database connections are terminated once', () => {
  it('reconnect and finish the run; no upstream call is answered twice', async () => {
    const source = join(dir, 'scenario.yaml');
    const started = await startWorkerRun({
      scenario: loadScenario(source),
      scenarioSource: source,
      database,
      workers: 3,
      leaseTtlMs: 1_500,
    });
    pool = started.workers;
    emulator = started.emulator!;
    const { runId } = started;
    const team = Array.from({ length: 3 }, () => startWorker(runId));

    // Mid-round 2, with calls in flight at the emulator (their answers and memo writes land around the cut).
    const deadline = Date.now() + 120_000;
    for (;;) {
      const parts = await loadParts(database, runId, 2);
      if (parts.some((p) => !p.done) && emulator.stats().inFlight > 0) break;
      if (Date.now() > deadline)
        throw new Error('round 2 never had a part in progress with a call in flight');
      await new Promise((r) => setTimeout(r, 20));
    }
    const { rows: cut } = await sql<{ ok: boolean }>`
      select pg_terminate_backend(pid) as ok from pg_stat_activity where application_name = ${TAG}
    `.execute(database.db);
    expect(cut.length).toBeGreaterThan(0);

    await Promise.race([
      Promise.all(team.map((w) => w.exited)),
      waitFor(() => false, 'the workers to finish the run', 180_000).catch(() => {}),
    ]);
    for (const w of team) {
      // A worker says it reconnected at most (a warning line), never an error or a stack trace.
      expect(w.stderr).not.toMatch(/"level":(50|60)|^\s+at /m);
      expect(await w.exited).toBe(0);
    }
    const run = await createRunStore(database).getRun(runId);
    expect(run?.status).toBe('completed');
    const { rows } = await sql<{
      n: string;
    }>`select count(*) as n from turns where run_id = ${runId}`.execute(database.db);
    expect(Number(rows[0]!.n)).toBe(AGENTS.length * ITEMS * ROUNDS);

    // Never paid twice: no idempotency key has two answers at the emulator, memoized or not.
    const answered = new Map<string, number>();
    for (const c of emulator.stats().calls)
      if (c.status === 200 && c.idempotencyKey)
        answered.set(c.idempotencyKey, (answered.get(c.idempotencyKey) ?? 0) + 1);
    expect([...answered].filter(([, n]) => n > 1)).toEqual([]);
  }, 300_000);
});
