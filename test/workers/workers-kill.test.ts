import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { sql } from 'kysely';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { loadScenario } from '../../src/scenarios/load-scenario.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore } from '../../src/store/run-store.ts';
import { loadParts, turnsByWorker } from '../../src/runs/workers/round-parts.ts';
import { startWorkerRun } from '../../src/runs/workers/start-worker-run.ts';
import type { StoredWorkersConfig } from '../../src/runs/run-scenario.ts';
import {
  cleanPool,
  perFileDatabase,
  postgresUrl,
  REDIS_URL,
  redisKeyPrefix,
} from '../support/coordination-env.ts';
import { waitFor } from '../support/wait-for.ts';
import { readJsonLines } from '../support/json-lines.ts';
import { childScript } from '../support/test-child.ts';

// This file's own PostgreSQL database and Redis key prefix (test/support/per-file-database.ts).
// At most 32 PostgreSQL connections at once: three workers and the test (measured peak, with room).
perFileDatabase({ connections: 32 });

/*
 * Three real worker processes on one PostgreSQL store, one emulator over real HTTP, the run's global tokens and
 * endpoint health on the store (PostgreSQL) or on Redis. Verdicts come from the emulator's own record (in-flight
 * high-water mark, calls per idempotency key), from the store's rows, and from the coordination backend's own
 * lease records read directly (their expiries on the backend's clock).
 */

const CHILD = childScript(fileURLToPath(new URL('./worker-child.ts', import.meta.url)));
const AGENTS = ['Kai', 'Yuna', 'Miso', 'Ari', 'Bo', 'Cy'];
const ITEMS = 4;
const ROUNDS = 3;
const LIMIT = 3;

const SCENARIO = `
name: workers-drill
timeScale: 1
runtime:
  endpoints:
    - { id: primary, provider: openai, model: gpt-4o, emulator: openai, apiKey: sk-workers-primary-000000000001 }
  chains: { main: [primary] }
  concurrency: { limit: ${LIMIT} }
  agentDefaults: { maxWaitMs: 120000 }
agents:
${AGENTS.map((a) => `  - { name: ${a}, chain: main, tier: analysis, role: "You are ${a}." }`).join('\n')}
rounds:
  count: ${ROUNDS}
  items:
${Array.from({ length: ITEMS }, (_, i) => `    - { id: I${i + 1}, title: Item ${i + 1} }`).join('\n')}
emulator:
  seed: 15
`;

interface Worker {
  readonly child: ChildProcess;
  readonly lines: Record<string, unknown>[];
  stderr: string;
  readonly exited: Promise<number | null>;
}

let dir: string;
let database: BreakwaterDatabase;
let emulator: Emulator;
const workers: Worker[] = [];
const pools: StoredWorkersConfig[] = [];
/** One connection for every read of the Redis lease records (opened on first use). */
let redis: Redis | undefined;

/** A global token's lease as the backend itself records it: its holder and expiry, on the backend's clock. */
interface LeaseRecord {
  readonly holder: string;
  readonly expiresAt: number;
}

/** The backend's clock now and every lease of the pool it still counts as held (expiry after now). */
async function liveLeases(w: StoredWorkersConfig): Promise<{ now: number; leases: LeaseRecord[] }> {
  if (w.coordination?.backend === 'redis') {
    redis ??= new Redis(REDIS_URL);
    const [s, us] = await redis.time();
    const now = Number(s) * 1000 + Math.floor(Number(us) / 1000);
    const flat = await redis.zrange(`${w.coordination.keyPrefix}${w.pool}:tokens`, '0', '-1', 'WITHSCORES');
    const leases: LeaseRecord[] = [];
    for (let i = 0; i < flat.length; i += 2) {
      const member = flat[i]!;
      leases.push({ holder: member.slice(0, member.lastIndexOf('|')), expiresAt: Number(flat[i + 1]) });
    }
    return { now, leases: leases.filter((l) => l.expiresAt > now) };
  }
  // One statement: the server's clock and the rows at the same instant (a pool with no row yet still has a now).
  const { rows } = await sql<{ holder: string | null; expires: string | null; now: string }>`
    select t.holder, extract(epoch from t.expires_at) * 1000 as expires, extract(epoch from n.now) * 1000 as now
    from (select now() as now) n
    left join coordination_tokens t on t.pool = ${w.pool} and t.slot >= 0
  `.execute(database.db);
  const now = Number(rows[0]!.now);
  return {
    now,
    leases: rows
      .filter((r) => r.holder !== null && r.expires !== null && Number(r.expires) > now)
      .map((r) => ({ holder: r.holder!, expiresAt: Number(r.expires) })),
  };
}

function startWorker(runId: string): Worker {
  const child = spawn(process.execPath, [CHILD, postgresUrl(), runId], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, BREAKWATER_LOG_LEVEL: '' },
  });
  const lines: Record<string, unknown>[] = [];
  const w: Worker = {
    child,
    lines,
    stderr: '',
    exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))),
  };
  readJsonLines(child.stdout!, (line) => lines.push(line));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => {
    w.stderr += s;
  });
  workers.push(w);
  return w;
}

/** Polls an async check (store reads), bounded like `waitFor`. */
async function until(check: () => Promise<boolean>, what: string, maxMs = 60_000): Promise<void> {
  let ok = false;
  let over = false;
  let failed: unknown;
  const poll = async () => {
    // Stops when the wait gave up: no read may outlive the test (its database is closed after it).
    while (!over) {
      ok = await check();
      if (ok) return;
      await new Promise((r) => setTimeout(r, 20));
    }
  };
  void poll().catch((e: unknown) => {
    failed = e;
  });
  try {
    await waitFor(() => ok || failed !== undefined, what, maxMs);
  } finally {
    over = true;
  }
  if (failed !== undefined) throw failed;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'bw-workers-'));
  writeFileSync(join(dir, 'scenario.yaml'), SCENARIO);
  database = await openDatabase({ url: postgresUrl() });
  // Slow enough calls that a round is in progress for a while: the kill lands mid-round.
  emulator = await startEmulator({ profile: { seed: 15, latency: { minMs: 150, maxMs: 300 } } });
});

afterAll(async () => {
  redis?.disconnect();
  for (const w of pools)
    await cleanPool(
      w.coordination?.backend === 'redis'
        ? { backend: 'redis', url: REDIS_URL, keyPrefix: w.coordination.keyPrefix!, pool: w.pool }
        : { backend: 'postgres', url: postgresUrl(), pool: w.pool },
    );
  for (const w of workers)
    if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
  await Promise.all(workers.map((w) => w.exited));
  await emulator.close();
  await database.close();
  rmSync(dir, { recursive: true, force: true });
});

const TTL = 1_500;

/*
 * One suite, two coordination backends for the run's tokens and endpoint health: the store itself (PostgreSQL, the
 * default), and Redis (`run --workers N --coordination-url redis://…`). The parts and rounds stay on the store.
 */
describe.each([
  { name: 'PostgreSQL', coordination: undefined },
  { name: 'Redis', coordination: { url: REDIS_URL, keyPrefix: redisKeyPrefix() } },
])('a run spread over three worker processes, tokens and health on $name', ({ name, coordination }) => {
  it('keeps the global limit at the emulator; a worker killed mid-round loses its tokens within the lease TTL and has its agents finished by the others, each turn once, no committed call repeated', async () => {
    const source = join(dir, 'scenario.yaml');
    const {
      runId,
      rounds,
      workers: shared,
    } = await startWorkerRun({
      scenario: loadScenario(source),
      scenarioSource: source,
      database,
      workers: 3,
      emulatorUrl: emulator.controlURL,
      leaseTtlMs: TTL,
      ...(coordination ? { coordination } : {}),
    });
    pools.push(shared);
    expect(rounds).toBe(ROUNDS);
    expect(shared.coordination?.backend ?? 'postgres').toBe(name === 'Redis' ? 'redis' : 'postgres');
    const team = Array.from({ length: 3 }, () => startWorker(runId));

    // Mid-round 2: a worker holds a part it has not staged yet and, on the coordination backend, a global token
    // (its call is at the emulator). The candidate is frozen (SIGSTOP) before the check is repeated, so what the test
    // records as orphaned is exactly what the worker held when it died: it cannot stage a part between the check and
    // the kill, and no survivor can take one over before its lease TTL has passed.
    let victimPid = 0;
    let victimHolder = '';
    let orphaned: string[] = [];
    await until(async () => {
      const parts = await loadParts(database, runId, 2);
      const { leases } = await liveLeases(shared);
      const open = parts.find((p) => !p.done && leases.some((l) => l.holder === p.holder));
      if (!open) return false;
      const pid = Number(open.holder.split(':')[1]);
      const candidate = team.find((w) => w.child.pid === pid);
      if (!candidate) return false;
      candidate.child.kill('SIGSTOP');
      const held = (await loadParts(database, runId, 2)).filter((p) => !p.done && p.holder === open.holder);
      if (held.length === 0) {
        candidate.child.kill('SIGCONT');
        return false;
      }
      victimPid = pid;
      victimHolder = open.holder;
      orphaned = held.map((p) => p.agent);
      return true;
    }, 'a worker to hold an unstaged part of round 2 and a global token');
    const victim = team.find((w) => w.child.pid === victimPid)!;
    victim.child.kill('SIGKILL');
    await victim.exited;
    // Its tokens, as the backend records them just after the kill: each runs out within one TTL of it (the last
    // renewal was before the kill), on the backend's own clock.
    const atKill = await liveLeases(shared);
    const victimLeases = atKill.leases.filter((l) => l.holder.includes(`:${victimPid}:`));
    expect(victimLeases.length).toBeGreaterThan(0);
    for (const l of victimLeases) expect(l.expiresAt).toBeLessThanOrEqual(atKill.now + TTL);
    // Once that TTL has passed on the backend's clock, the backend counts none of them as held: they are free for
    // the survivors, and the live leases never exceed the limit.
    let after = atKill;
    await until(
      async () => {
        after = await liveLeases(shared);
        return after.now > atKill.now + TTL;
      },
      'the lease TTL to pass on the backend',
      10_000,
    );
    expect(after.leases.filter((l) => l.holder.includes(`:${victimPid}:`))).toEqual([]);
    expect(after.leases.length).toBeLessThanOrEqual(LIMIT);
    expect(orphaned.length).toBeGreaterThan(0);

    const survivors = team.filter((w) => w !== victim);
    // Bounded, and the bound is a timer cleared after: a 5 ms poll left running would outlive the test in this worker.
    let giveUp: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.all(survivors.map((w) => w.exited)),
      new Promise<void>((resolve) => {
        giveUp = setTimeout(resolve, 120_000);
      }),
    ]);
    clearTimeout(giveUp);
    for (const w of survivors) {
      expect(w.stderr).toBe('');
      expect(await w.exited).toBe(0);
    }

    const run = await createRunStore(database).getRun(runId);
    expect(run?.status).toBe('completed');
    expect(run?.currentRound).toBe(ROUNDS);

    // The victim's unstaged parts were taken over (a newer generation) and staged by a survivor.
    const round2 = await loadParts(database, runId, 2);
    for (const agent of orphaned) {
      const part = round2.find((p) => p.agent === agent)!;
      expect(part.done).toBe(true);
      expect(part.holder).not.toBe(victimHolder);
      expect(part.generation).toBeGreaterThan(1);
    }

    // One turn per (round, item, agent), every one of them.
    const { rows } = await sql<{ n: string; distinct_n: string }>`
      select count(*) as n, count(distinct (round, item_id, agent)) as distinct_n from turns where run_id = ${runId}
    `.execute(database.db);
    expect(Number(rows[0]!.n)).toBe(ROUNDS * ITEMS * AGENTS.length);
    expect(Number(rows[0]!.distinct_n)).toBe(ROUNDS * ITEMS * AGENTS.length);

    // No committed call was made twice: every call in the memo was answered once at the emulator.
    const memo = await database.db
      .selectFrom('call_results')
      .select('idempotency_key')
      .where('run_id', '=', runId)
      .execute();
    expect(memo.length).toBeGreaterThanOrEqual(ROUNDS * ITEMS * AGENTS.length);
    const answered = new Map<string, number>();
    for (const c of emulator.stats().calls)
      if (c.status === 200 && c.idempotencyKey)
        answered.set(c.idempotencyKey, (answered.get(c.idempotencyKey) ?? 0) + 1);
    const repeated = memo.filter((m) => answered.get(m.idempotency_key) !== 1);
    // On failure, each repeated key's answers at the emulator (status, started at) say how it came to repeat.
    const answers = (key: string) =>
      emulator
        .stats()
        .calls.filter((c) => c.idempotencyKey === key)
        .map((c) => `${c.status}@${c.startedAt}`);
    expect(
      repeated,
      `victim ${victimPid}: ${repeated.map((m) => `${m.idempotency_key} → ${answers(m.idempotency_key).join(', ')}`).join('; ')}`,
    ).toEqual([]);

    // The global limit held across the three processes, at the emulator.
    expect(emulator.stats().maxInFlight).toBeLessThanOrEqual(LIMIT);
    expect(emulator.stats().maxInFlight).toBeGreaterThanOrEqual(2);

    // The three processes' events share one log with unique, increasing seq numbers (the visualizer pages by seq).
    const seqs = await sql<{ n: string; d: string }>`
      select count(*) as n, count(distinct seq) as d from events where run_id = ${runId}
    `.execute(database.db);
    expect(Number(seqs.rows[0]!.n)).toBeGreaterThan(ROUNDS * ITEMS * AGENTS.length);
    expect(Number(seqs.rows[0]!.d)).toBe(Number(seqs.rows[0]!.n));

    // Which worker did what: the by-worker counts add up to every turn, and all three did some.
    const byWorker = await turnsByWorker(database, runId);
    expect(Object.values(byWorker).reduce((a, b) => a + b, 0)).toBe(ROUNDS * ITEMS * AGENTS.length);
    expect(Object.keys(byWorker)).toHaveLength(3);

    // The survivors took tokens on that same backend (and, on Redis, none on the store's PostgreSQL).
    if (shared.coordination?.backend === 'redis') {
      const { rows: onStore } = await sql<{ n: string }>`
        select count(*) as n from coordination_tokens where pool = ${shared.pool}
      `.execute(database.db);
      expect(Number(onStore[0]!.n)).toBe(0);
    }
  }, 180_000);
});
