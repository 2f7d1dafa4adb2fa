/**
 * bench:durability — what exactly-once rounds and resume cost, on PGlite and on the PostgreSQL server, measured
 * in the same run with the two backends interleaved.
 *
 * Payloads come from the real runtime (`bench/lib/scenario-history.ts`): the agent8-storm agents answer the
 * scenario's round prompts (the others' previous answers quoted) with three-sentence answers; turns, agent states
 * and endpoint health are built as `runRounds` commits them.
 * - commit of one 8-agent round (8 turns: one agenda item, every agent; the 8 agents' states; the endpoints'
 *   health), timed at round 1 and at round `--rounds` (100) of long runs: p50 over `--runs` runs each.
 * - bytes stored per turn after 10 and after 100 rounds of such a run (`pg_column_size` of its turns, rounds and
 *   agent-state rows, divided by its turns): constant when nothing grows with history.
 * - resume of a 1,000-turn run (125 rounds × 8 agents): get the run, take its lease, mark it running, load and
 *   validate the agent states, rebuild each agent's memory window from its last turns, read the health and the
 *   answer cache's entries, preload the call memo, rebuild the executor from the XState snapshots, put health and
 *   cache back, read the last round's answers the next prompts quote; ready to ask. p50 over `--resumes`.
 * PGlite runs file-backed in a temp directory (as its default `.breakwater/`); the server is `DATABASE_URL`
 * (default `postgres://postgres@127.0.0.1:5432/test`). Only `bench-durability-*` runs are written, and deleted.
 * These are figures, printed and written to bench/results/durability.json; no test asserts on them.
 *
 * Run: `npm run bench:durability` (options: `--runs 20 --rounds 100 --resumes 5`).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { sql } from 'kysely';
import { AGENT_MACHINE_VERSION } from '../machines/agent.machine.ts';
import { systemClock } from '../src/clock/clock.ts';
import { createBreakwaterExecutor } from '../src/runs/breakwater-executor.ts';
import { applyRunRestore, loadRunRestore } from '../src/runs/run-restore.ts';
import { storeCallMemo } from '../src/runs/store-call-memo.ts';
import type { LlmAgentDefinition } from '../src/runtime/agent-definition.ts';
import { type BreakwaterDatabase, openDatabase } from '../src/store/open-database.ts';
import { acquireRunLease } from '../src/store/run-lease.ts';
import { createRunStore, type RunStore } from '../src/store/run-store.ts';
import { row, writeResult } from './lib/bench-result.ts';
import {
  agent8Storm,
  buildAgent8History,
  type HistoryRound,
  scriptedEngine,
} from './lib/scenario-history.ts';
import { percentile, round } from './lib/stats.ts';

const { values: args } = parseArgs({
  options: {
    runs: { type: 'string', default: '20' },
    rounds: { type: 'string', default: '100' },
    resumes: { type: 'string', default: '5' },
  },
});
const RUNS = Number(args.runs);
const ROUNDS = Number(args.rounds);
const RESUMES = Number(args.resumes);
const RESUME_ROUNDS = 125; // × 8 agents = 1,000 turns
const DEFAULT_URL = 'postgres://postgres@127.0.0.1:5432/test';
const PREFIX = `bench-durability-${process.pid}-${Date.now().toString(36)}`;

type BackendName = 'pglite' | 'pg';

interface Backend {
  readonly name: BackendName;
  readonly database: BreakwaterDatabase;
  readonly store: RunStore;
  readonly openMs: number;
  readonly cleanup: () => Promise<void>;
}

async function openBackends(): Promise<Backend[]> {
  const dir = await mkdtemp(join(tmpdir(), 'bench-durability-'));
  const t0 = performance.now();
  const lite = await openDatabase({ dataDir: dir });
  const liteMs = performance.now() - t0;
  const url = process.env.DATABASE_URL?.trim() || DEFAULT_URL;
  const t1 = performance.now();
  const server = await openDatabase({ url }).catch(async (e: unknown) => {
    await lite.close();
    await rm(dir, { recursive: true, force: true });
    throw new Error(
      `PostgreSQL at ${url.replace(/:[^:@/]*@/, ':***@')} is not reachable (${e instanceof Error ? e.message : String(e)}); ` +
        'start it or set DATABASE_URL — this benchmark measures PGlite and the server side by side',
    );
  });
  const serverMs = performance.now() - t1;
  return [
    {
      name: 'pglite',
      database: lite,
      store: createRunStore(lite),
      openMs: liteMs,
      cleanup: async () => {
        await lite.close();
        await rm(dir, { recursive: true, force: true });
      },
    },
    {
      name: 'pg',
      database: server,
      store: createRunStore(server),
      openMs: serverMs,
      cleanup: async () => {
        await server.db.deleteFrom('events').where('run_id', 'like', `${PREFIX}%`).execute();
        await server.db.deleteFrom('call_results').where('run_id', 'like', `${PREFIX}%`).execute();
        await server.db.deleteFrom('runs').where('run_id', 'like', `${PREFIX}%`).execute();
        await server.close();
      },
    },
  ];
}

/** Alternates which backend goes first, so neither always runs on a cache the other just warmed. */
function ordered(backends: Backend[], i: number): Backend[] {
  return i % 2 === 0 ? backends : [...backends].reverse();
}

/**
 * Round `k` of a long run: the k-th agenda item's 8 turns (cycling through the 35), the agents' states, the health.
 * In a real run every agent's state changes every round (its memory window moves), so every round writes all 8
 * state rows: the states alternate between the end of history round 2 and of round 1, never repeating the last
 * commit's (a repeated state is skipped by the commit, which would make every round after the first cheaper).
 */
function roundInput(runId: string, k: number, mid: HistoryRound, other: HistoryRound) {
  const from = ((k - 1) % 35) * 8;
  const states = k % 2 === 1 ? mid.states : other.states;
  return { runId, round: k, turns: mid.turns.slice(from, from + 8), states, health: mid.health };
}

/** What the run's rows take on disk (`pg_column_size` of whole rows), per committed turn. */
async function bytesPerTurn(b: Backend, runId: string): Promise<number> {
  const size = async (table: 'turns' | 'rounds' | 'agent_states') =>
    Number(
      (
        await sql<{ n: string | number | null }>`
          select coalesce(sum(pg_column_size(t.*)), 0) as n from ${sql.table(table)} t where t.run_id = ${runId}`.execute(
          b.database.db,
        )
      ).rows[0]?.n ?? 0,
    );
  const turns = Number(
    (
      await sql<{ n: string | number }>`select count(*) as n from turns where run_id = ${runId}`.execute(
        b.database.db,
      )
    ).rows[0]?.n ?? 0,
  );
  return ((await size('turns')) + (await size('rounds')) + (await size('agent_states'))) / turns;
}

interface LongRunSamples {
  first: Record<BackendName, number[]>;
  late: Record<BackendName, number[]>;
  all: Record<BackendName, number[]>;
  bytes10: Partial<Record<BackendName, number>>;
  bytes100: Partial<Record<BackendName, number>>;
}

/** `RUNS` + 1 runs of `ROUNDS` commits per backend, interleaved; the first run of each backend warms it up. */
async function longRuns(
  backends: Backend[],
  mid: HistoryRound,
  other: HistoryRound,
): Promise<LongRunSamples> {
  const out: LongRunSamples = {
    first: { pglite: [], pg: [] },
    late: { pglite: [], pg: [] },
    all: { pglite: [], pg: [] },
    bytes10: {},
    bytes100: {},
  };
  for (let r = 0; r <= RUNS; r++) {
    for (const b of ordered(backends, r)) {
      const runId = `${PREFIX}-long-${r}`;
      await b.store.createRun({
        runId,
        scenario: 'agent8-storm',
        totalRounds: ROUNDS,
        machineVersion: AGENT_MACHINE_VERSION,
      });
      for (let k = 1; k <= ROUNDS; k++) {
        const input = roundInput(runId, k, mid, other);
        const t0 = performance.now();
        await b.store.commitRound(input);
        const ms = performance.now() - t0;
        if (r > 0) {
          out.all[b.name].push(ms);
          if (k === 1) out.first[b.name].push(ms);
          if (k === ROUNDS) out.late[b.name].push(ms);
        }
        if (r === 1 && k === 10) out.bytes10[b.name] = await bytesPerTurn(b, runId);
        if (r === 1 && k === 100) out.bytes100[b.name] = await bytesPerTurn(b, runId);
      }
    }
    process.stdout.write('.');
  }
  process.stdout.write('\n');
  return out;
}

interface ResumeSample {
  totalMs: number;
  restoreMs: number;
  rebuildMs: number;
  peersMs: number;
}

/** Resumes a committed 1,000-turn run the way `runScenario` does, up to the first ask. */
async function resume(b: Backend, runId: string): Promise<ResumeSample> {
  const { runtime, definitions } = agent8Storm();
  const windowOf = (d: unknown) =>
    (d as LlmAgentDefinition).historyTurns ?? runtime.agentDefaults?.historyTurns ?? 6;
  const t0 = performance.now();
  const run = await b.store.getRun(runId);
  if (!run) throw new Error(`run ${runId} is missing`);
  const lease = await acquireRunLease(b.database, runId);
  await b.store.setRunStatus(runId, 'running');
  const restore = await loadRunRestore(b.store, runId, definitions, windowOf);
  const memo = await storeCallMemo(b.store, runId, run.currentRound + 1);
  const t1 = performance.now();
  const executor = createBreakwaterExecutor({
    config: runtime,
    agents: definitions,
    restored: restore.agents,
    clock: systemClock,
    memo,
    createEngine: scriptedEngine,
  });
  applyRunRestore(executor.supervisor, restore);
  const t2 = performance.now();
  const peers = await b.store.listTurns(runId, { round: run.currentRound });
  const t3 = performance.now();
  const ready = executor.supervisor.agents().every((h) => h.state() === 'idle');
  if (!ready) throw new Error('a resumed agent is not idle');
  if (peers.length !== 8) throw new Error(`expected 8 turns in the last round, read ${peers.length}`);
  for (const d of definitions) {
    const n = executor.memory(d.name).utterances.length;
    if (n !== windowOf(d)) throw new Error(`${d.name} resumed with ${n} utterances, expected ${windowOf(d)}`);
  }
  await executor.stop();
  await lease.release();
  return { totalMs: t3 - t0, restoreMs: t1 - t0, rebuildMs: t2 - t1, peersMs: t3 - t2 };
}

async function resumes(
  backends: Backend[],
  mid: HistoryRound,
  other: HistoryRound,
): Promise<Record<BackendName, ResumeSample[]>> {
  const out: Record<BackendName, ResumeSample[]> = { pglite: [], pg: [] };
  for (const b of backends) {
    const runId = `${PREFIX}-resume`;
    await b.store.createRun({
      runId,
      scenario: 'agent8-storm',
      totalRounds: RESUME_ROUNDS + 1,
      machineVersion: AGENT_MACHINE_VERSION,
    });
    for (let k = 1; k <= RESUME_ROUNDS; k++) await b.store.commitRound(roundInput(runId, k, mid, other));
    await b.store.setRunStatus(runId, 'interrupted');
  }
  // One resume more than measured: the first warms each backend's resume path (JIT, plans, caches).
  for (let i = 0; i <= RESUMES; i++) {
    for (const b of ordered(backends, i)) {
      const sample = await resume(b, `${PREFIX}-resume`);
      if (i > 0) out[b.name].push(sample);
    }
  }
  return out;
}

async function main(): Promise<void> {
  console.log('building agent8-storm history through the runtime (8 agents × 35 items × 2 rounds)');
  const history = await buildAgent8History(2);
  const mid = history[1]!;
  const other = history[0]!;
  const backends = await openBackends();
  let long: LongRunSamples;
  let resumed: Record<BackendName, ResumeSample[]>;
  try {
    console.log(`long runs: ${RUNS} (+1 warm-up) runs of ${ROUNDS} 8-agent rounds per backend, interleaved`);
    long = await longRuns(backends, mid, other);
    console.log(`resumes: a ${RESUME_ROUNDS * 8}-turn run, ${RESUMES} (+1 warm-up) resumes per backend`);
    resumed = await resumes(backends, mid, other);
  } finally {
    for (const b of backends) await b.cleanup().catch((e) => console.error(`cleanup ${b.name}:`, e));
  }

  const med = (xs: number[]) => round(percentile(xs, 50));
  const view = (name: BackendName) => {
    const r = resumed[name];
    return {
      commitRound1P50Ms: med(long.first[name]),
      [`commitRound${ROUNDS}P50Ms`]: med(long.late[name]),
      commitAllRoundsP50Ms: med(long.all[name]),
      commitAllRoundsP90Ms: round(percentile(long.all[name], 90)),
      commitSamplesPerRound: long.first[name].length,
      bytesPerTurnAt10Rounds: round(long.bytes10[name] ?? Number.NaN, 0),
      bytesPerTurnAt100Rounds: round(long.bytes100[name] ?? Number.NaN, 0),
      resume1000TurnsP50Ms: med(r.map((s) => s.totalMs)),
      resumeBreakdownMs: {
        runLeaseStatesWindowsHealthCacheMemo: med(r.map((s) => s.restoreMs)),
        rebuildExecutorFromSnapshots: med(r.map((s) => s.rebuildMs)),
        readLastRoundAnswers: med(r.map((s) => s.peersMs)),
      },
      resumes: r.length,
      openMs: round(backends.find((b) => b.name === name)!.openMs, 0),
    };
  };
  const pglite = view('pglite');
  const pg = view('pg');
  const late = (v: ReturnType<typeof view>) => v[`commitRound${ROUNDS}P50Ms`] as number;
  const spread = (v: ReturnType<typeof view>) =>
    round(Math.abs(late(v) - v.commitRound1P50Ms) / Math.min(late(v), v.commitRound1P50Ms), 3);
  const targets = { pg: { commitP50Ms: 3, commitSpreadMax: 0.2, resume1000TurnsMs: 200 } };
  const met = {
    pg: {
      commitRound1P50Ms: pg.commitRound1P50Ms <= targets.pg.commitP50Ms,
      [`commitRound${ROUNDS}P50Ms`]: late(pg) <= targets.pg.commitP50Ms,
      commitSpread: spread(pg) <= targets.pg.commitSpreadMax,
      resume1000TurnsMs: pg.resume1000TurnsP50Ms <= targets.pg.resume1000TurnsMs,
    },
  };
  const mark = (ok: boolean) => (ok ? 'met' : 'MISSED');

  console.log();
  console.log(row('', 'PGlite', 'PostgreSQL', 'PGlite ÷ PG'));
  const line = (label: string, a: number, b: number) => console.log(row(label, a, b, round(a / b, 2)));
  line('commit 8-agent round, round 1 p50 (ms)', pglite.commitRound1P50Ms, pg.commitRound1P50Ms);
  line(`commit 8-agent round, round ${ROUNDS} p50 (ms)`, late(pglite), late(pg));
  line('commit, every round p50 (ms)', pglite.commitAllRoundsP50Ms, pg.commitAllRoundsP50Ms);
  line('commit, every round p90 (ms)', pglite.commitAllRoundsP90Ms, pg.commitAllRoundsP90Ms);
  line('bytes per turn after 10 rounds', pglite.bytesPerTurnAt10Rounds, pg.bytesPerTurnAt10Rounds);
  line('bytes per turn after 100 rounds', pglite.bytesPerTurnAt100Rounds, pg.bytesPerTurnAt100Rounds);
  line('resume 1,000-turn run p50 (ms)', pglite.resume1000TurnsP50Ms, pg.resume1000TurnsP50Ms);
  line(
    '  run, lease, states, windows, health, cache, memo',
    pglite.resumeBreakdownMs.runLeaseStatesWindowsHealthCacheMemo,
    pg.resumeBreakdownMs.runLeaseStatesWindowsHealthCacheMemo,
  );
  line(
    '  rebuild 8 agents from snapshots',
    pglite.resumeBreakdownMs.rebuildExecutorFromSnapshots,
    pg.resumeBreakdownMs.rebuildExecutorFromSnapshots,
  );
  line(
    '  read last round answers',
    pglite.resumeBreakdownMs.readLastRoundAnswers,
    pg.resumeBreakdownMs.readLastRoundAnswers,
  );
  line('open + migrate (ms, not in resume)', pglite.openMs, pg.openMs);
  console.log();
  console.log(
    `PostgreSQL: commit p50 round 1 ${pg.commitRound1P50Ms} ms, round ${ROUNDS} ${late(pg)} ms ` +
      `(target ≤ ${targets.pg.commitP50Ms}: ${mark(met.pg.commitRound1P50Ms && (met.pg[`commitRound${ROUNDS}P50Ms`] as boolean))}; ` +
      `apart ${round(spread(pg) * 100, 1)} %, target ≤ 20 %: ${mark(met.pg.commitSpread as boolean)}), ` +
      `resume of 1,000 turns ${pg.resume1000TurnsP50Ms} ms (target ≤ ${targets.pg.resume1000TurnsMs}: ${mark(met.pg.resume1000TurnsMs as boolean)})`,
  );
  const path = await writeResult('durability', {
    pg,
    pglite,
    targets,
    met,
    measuredAs: {
      commit: `store.commitRound of one 8-agent round (8 turns of one agenda item from agent8-storm round 2, the 8 agents' states, the endpoints' health), timed at round 1 and at round ${ROUNDS} of ${RUNS} runs per backend (after one warm-up run); every round writes the 8 agents' states (they alternate between two real end-of-round states, as a real run's change every round)`,
      bytesPerTurn:
        'sum of pg_column_size over the run’s turns, rounds and agent_states rows, divided by its turns, after 10 and after 100 rounds',
      resume: `getRun + acquireRunLease + setRunStatus + loadRunRestore (agent states, memory windows from turns, health, answer-cache entries) + call-memo preload + createBreakwaterExecutor(restored snapshots) + applyRunRestore + listTurns(last round); ${RESUME_ROUNDS} rounds × 8 agents = ${RESUME_ROUNDS * 8} turns; open/migrate not included (openMs)`,
      pglite: 'file-backed temp dataDir',
      pg: 'DATABASE_URL or postgres://postgres@127.0.0.1:5432/test, pg pool of 10',
    },
  });
  console.log(`wrote ${path}`);
}

await main();
