import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import pg from 'pg';
import type { Emulator } from '../../src/emulator/emulator-server.ts';
import { createRunStore, type RunStore } from '../../src/store/run-store.ts';
import type { EventRecord } from '../../src/store/store-types.ts';
import { openDatabase } from '../../src/store/open-database.ts';
import { turnKey } from '../../src/store/turn-key.ts';
import { AGENTS, ITEMS, ROUNDS } from '../rounds/crash-drill.ts';
import { connectAdmin, SERVER_URL, urlOfDatabase } from '../support/test-databases.ts';

/*
 * The crash suite's harness (issue 42): a backend (a PGlite folder or a database of its own on the PostgreSQL
 * server), CLI children killed at seeded moments, and the checks made after every resume against an uninterrupted
 * run of the same scenario and against the emulator's record of every upstream call.
 */

const ROOT = join(import.meta.dirname, '..', '..');
/** Longest a child may take before the suite gives up on it (only a hang reaches it). */
const CHILD_DEADLINE_MS = 180_000;

export interface CrashBackend {
  readonly name: 'pglite' | 'postgres';
  /** The CLI flags naming the store. */
  readonly flags: readonly string[];
  /** The PostgreSQL URL (a database of its own), absent for PGlite. */
  readonly url?: string;
  /** Opens the store while no child holds it (PGlite: one process at a time), runs `fn`, closes it. */
  withStore<T>(fn: (store: RunStore, db: Awaited<ReturnType<typeof openDatabase>>) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}

/** A PGlite folder under `dir`. */
export function pgliteBackend(dir: string): CrashBackend {
  const dataDir = join(dir, 'pglite');
  return {
    name: 'pglite',
    flags: ['--data-dir', dataDir],
    async withStore(fn) {
      const database = await openDatabase({ dataDir });
      try {
        return await fn(createRunStore(database), database);
      } finally {
        await database.close();
      }
    },
    async close() {},
  };
}

/** A fresh database on the PostgreSQL server, dropped by `close`: its connections can be terminated freely. */
export async function postgresBackend(): Promise<CrashBackend> {
  const name = `bw_crash_${randomBytes(5).toString('hex')}`;
  // Its own database, made and dropped through the server's maintenance database (never the shared `test`).
  const admin = await connectAdmin();
  await admin.query(`create database ${name}`);
  await admin.end();
  const url = new URL(urlOfDatabase(SERVER_URL, name));
  return {
    name: 'postgres',
    url: url.toString(),
    flags: ['--database-url', url.toString()],
    async withStore(fn) {
      const database = await openDatabase({ url: url.toString() });
      try {
        return await fn(createRunStore(database), database);
      } finally {
        await database.close();
      }
    },
    async close() {
      const a = await connectAdmin();
      await a.query(`drop database if exists ${name} with (force)`);
      await a.end();
    },
  };
}

/** A CLI child; `exit` resolves with how it ended. */
export interface Child {
  readonly process: ChildProcess;
  readonly exit: Promise<{ code: number | null; killed: boolean; stderr: string }>;
}

/** Starts `breakwater <args>`, killed with SIGKILL past the deadline (only a hang gets there). */
export function cli(args: readonly string[], env: Record<string, string> = {}): Child {
  const child = spawn(process.execPath, ['bin/breakwater.js', ...args], {
    cwd: ROOT,
    env: { ...process.env, BREAKWATER_LOG_LEVEL: 'silent', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (d: string) => {
    stderr += d;
  });
  child.stdout?.resume();
  const deadline = setTimeout(() => child.kill('SIGKILL'), CHILD_DEADLINE_MS);
  const exit = new Promise<{ code: number | null; killed: boolean; stderr: string }>((resolve) => {
    child.on('exit', (code, signal) => {
      clearTimeout(deadline);
      resolve({ code, killed: signal === 'SIGKILL', stderr });
    });
  });
  return { process: child, exit };
}

/** What is durable at one moment: committed turns (key → answer and outcome) and memoized call keys. */
export interface Durable {
  readonly exists: boolean;
  readonly currentRound: number;
  readonly status: string | undefined;
  readonly turns: ReadonlyMap<string, string>;
  readonly memo: ReadonlySet<string>;
  /** When each memoized call was written (wall ms). */
  readonly memoAt: ReadonlyMap<string, number>;
  readonly events: readonly EventRecord[];
}

const turnId = (runId: string, round: number, itemId: string, agent: string) =>
  turnKey({ runId, round, itemId, agent });

export async function durable(backend: CrashBackend, runId: string): Promise<Durable> {
  return backend.withStore(async (store, database) => {
    const run = await store.getRun(runId);
    const turns = run ? await store.listTurns(runId) : [];
    const memo = await database.db
      .selectFrom('call_results')
      .select(['idempotency_key', 'created_at'])
      .where('run_id', '=', runId)
      .execute();
    const events = run ? await store.readEvents(runId) : [];
    return {
      exists: run !== undefined,
      currentRound: run?.currentRound ?? 0,
      status: run?.status,
      turns: new Map(
        turns.map((t) => [
          turnId(runId, t.round, t.itemId, t.agent),
          JSON.stringify([t.outcome, (t.answer as { text?: string } | null)?.text ?? null]),
        ]),
      ),
      memo: new Set(memo.map((m) => m.idempotency_key)),
      memoAt: new Map(memo.map((m) => [m.idempotency_key, new Date(m.created_at).getTime()])),
      events,
    };
  });
}

/** A run's committed turns keyed without the run id, for comparing with the uninterrupted run. */
export function byTurn(runId: string, d: Durable): Map<string, string> {
  const prefix = `${runId}:`;
  return new Map([...d.turns].map(([k, v]) => [k.slice(prefix.length), v]));
}

/** A turn's outcome and the start and end of its answer: enough to tell two apart in a message. */
function short(v: string | undefined): string {
  if (v === undefined) return 'missing';
  const [outcome, text] = JSON.parse(v) as [string, string | null];
  return `${outcome} "${(text ?? '').slice(0, 12)}…${(text ?? '').slice(-24)}"`;
}

/** The violations of one run once it completed: the counts a crash may never change. */
export function checkCompleted(
  runId: string,
  d: Durable,
  baseline: { turns: ReadonlyMap<string, string>; degraded: number },
): { violations: string[]; degraded: number; turns: number } {
  const violations: string[] = [];
  if (d.status !== 'completed' || d.currentRound !== ROUNDS)
    violations.push(`${runId}: ${d.status} at round ${d.currentRound}, not completed at ${ROUNDS}`);
  const mine = byTurn(runId, d);
  if (mine.size !== ROUNDS * ITEMS * AGENTS.length)
    violations.push(`${runId}: ${mine.size} committed turns, not ${ROUNDS * ITEMS * AGENTS.length}`);
  for (const [k, v] of baseline.turns)
    if (mine.get(k) !== v)
      violations.push(`${runId}: turn ${k} is ${short(mine.get(k))}, uninterrupted ${short(v)}`);
  const degraded = [...mine.values()].filter((v) => v.startsWith('["degraded"')).length;
  if (degraded > baseline.degraded + 2)
    violations.push(`${runId}: ${degraded} degraded turns, uninterrupted ${baseline.degraded} (+2 allowed)`);
  violations.push(...checkEvents(runId, d));
  return { violations, degraded, turns: mine.size };
}

/**
 * The event log as committed: exactly one `turn.completed` per committed turn (none for a turn not committed) and
 * one `round.committed` per committed round — at any moment, so after every crash too.
 */
export function checkEvents(runId: string, d: Durable): string[] {
  const violations: string[] = [];
  const events = d.events;
  const completed = new Map<string, number>();
  const rounds = new Map<number, number>();
  for (const e of events) {
    const data = e.data as { round?: number; itemId?: string };
    if (e.type === 'turn.completed' && data.round !== undefined && data.itemId !== undefined && e.agent) {
      const k = turnId(runId, data.round, data.itemId, e.agent);
      completed.set(k, (completed.get(k) ?? 0) + 1);
    }
    if (e.type === 'round.committed' && data.round !== undefined)
      rounds.set(data.round, (rounds.get(data.round) ?? 0) + 1);
  }
  for (const k of d.turns.keys())
    if (completed.get(k) !== 1) violations.push(`${runId}: ${completed.get(k) ?? 0} turn.completed for ${k}`);
  for (const k of completed.keys())
    if (!d.turns.has(k)) violations.push(`${runId}: turn.completed for ${k}, which is not committed`);
  for (let r = 1; r <= ROUNDS; r++) {
    const want = r <= d.currentRound ? 1 : 0;
    if ((rounds.get(r) ?? 0) !== want)
      violations.push(
        `${runId}: ${rounds.get(r) ?? 0} round.committed for round ${r} (committed ${d.currentRound})`,
      );
  }
  return violations;
}

/**
 * The upstream calls of a run, from the emulator's record: a call is never asked again once its answer was
 * durable — memoized (`memoAt` before the next ask started) or its turn committed before the process that asked
 * again started. A call answered upstream whose process died before it memoized the answer is asked again by the
 * resume (nothing on our side knew it had returned): counted as `inFlightReasked`, not a violation.
 */
export function checkCalls(
  emulator: Emulator,
  runId: string,
  phases: readonly { readonly fromSeq: number; readonly before: Durable }[],
  memoAt: ReadonlyMap<string, number>,
): { violations: string[]; answered: number; inFlightReasked: number } {
  const violations: string[] = [];
  const prefix = `${runId}:`;
  const calls = emulator.stats().calls.filter((c) => c.idempotencyKey?.startsWith(prefix));
  const answered = new Map<string, number>();
  let inFlightReasked = 0;
  for (const c of calls) {
    const key = c.idempotencyKey!;
    // The phase this call belongs to: the last one started before it.
    const phase = [...phases].reverse().find((p) => c.seq > p.fromSeq);
    if (phase) {
      if (phase.before.memo.has(key)) violations.push(`memoized call ${key} asked again`);
      const turn = key.replace(/:call\d+$/, '');
      if (phase.before.turns.has(turn)) violations.push(`committed turn ${turn} asked again (${key})`);
    }
    // Workers take a dead worker's part over inside one phase: its memo row's time tells what was durable.
    const at = memoAt.get(key);
    if (at !== undefined && at < c.startedAt)
      violations.push(`call ${key} asked again after it was memoized`);
    if (c.status !== 200) continue;
    const n = (answered.get(key) ?? 0) + 1;
    answered.set(key, n);
    if (n > 1) inFlightReasked++;
  }
  return { violations, answered: answered.size, inFlightReasked };
}

/** The backends of the run's children connections, terminated (the observer's own are not theirs). */
export async function terminateConnections(url: string): Promise<number> {
  const client = new pg.Client({ connectionString: url, application_name: 'bw-crash-terminator' });
  await client.connect();
  try {
    const { rows } = await client.query(
      `select count(pg_terminate_backend(pid)) as n from pg_stat_activity
       where datname = current_database() and pid <> pg_backend_pid()`,
    );
    return Number(rows[0].n);
  } finally {
    await client.end();
  }
}

/** The pids of the workers holding parts of a run's open round (their holder is `host:pid:nonce`). */
export async function workerPids(url: string, runId: string): Promise<number[]> {
  const client = new pg.Client({ connectionString: url, application_name: 'bw-crash-observer' });
  await client.connect();
  try {
    const { rows } = await client.query(
      `select distinct p.holder from round_parts p join runs r on r.run_id = p.run_id
       where p.run_id = $1 and p.round = r.current_round + 1 and not p.done`,
      [runId],
    );
    return rows.map((r: { holder: string }) => Number(r.holder.split(':')[1])).filter((p) => p > 0);
  } finally {
    await client.end();
  }
}
