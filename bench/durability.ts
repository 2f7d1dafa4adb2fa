/**
 * bench:durability — what exactly-once rounds and resume cost, on PGlite and on the PostgreSQL server,
 * measured in the same run with the two backends interleaved.
 *
 * Payloads come from the real runtime (`bench/lib/scenario-history.ts`): the agent8-storm agents answer the
 * scenario's round prompts (the others' previous answers quoted) with three-sentence answers; turns and
 * snapshots are built as `runRounds` commits them.
 * - commit of one 8-agent round: 8 turns (one agenda item, every agent) + 8 agent snapshots as they are at
 *   the middle of the run (70 turns each), p50 over ≥ 50 commits. Beside it: the runner's real round of
 *   agent8-storm (35 items × 8 agents = 280 turns + 8 snapshots).
 * - resume of a 105-turn run: agent8-storm after its 3 rounds (8 agents × 105 turns each): get the run, mark it
 *   running, load the latest snapshots, rebuild the executor's agents from them (`createBreakwaterExecutor`
 *   with `memories`), read the last round's answers the next prompts quote; ready to ask.
 * PGlite runs file-backed in a temp directory (as its default `.breakwater/`); the server is `DATABASE_URL`
 * (default `postgres://postgres@127.0.0.1:5432/test`). Only `bench-durability-*` runs are written, and deleted.
 *
 * Run: `npm run bench:durability` (options: `--commits 60 --runs 5`).
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { AGENT_MACHINE_VERSION } from '../machines/agent.machine.ts';
import { systemClock } from '../src/clock/clock.ts';
import { createBreakwaterExecutor } from '../src/rounds/breakwater-executor.ts';
import { storeCallMemo } from '../src/rounds/store-call-memo.ts';
import type { AgentMemory } from '../src/runtime/turn.ts';
import { type BreakwaterDatabase, openDatabase } from '../src/store/open-database.ts';
import { createRunStore, type RunStore } from '../src/store/run-store.ts';
import type { SnapshotInput } from '../src/store/store-types.ts';
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
    commits: { type: 'string', default: '60' },
    runs: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '5' },
  },
});
const COMMITS = Number(args.commits);
const RUNS = Number(args.runs);
const WARMUP = Number(args.warmup);
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

const jsonBytes = (v: unknown) => Buffer.byteLength(JSON.stringify(v));

async function timed<T>(fn: () => Promise<T>): Promise<[T, number]> {
  const t0 = performance.now();
  const value = await fn();
  return [value, performance.now() - t0];
}

/**
 * The same snapshots with only the last utterance kept (in `utterances` and in the actor's context): what a
 * commit would carry if snapshots held the round's delta instead of the whole history. Diagnostic only.
 */
function lastUtteranceOnly(snapshots: SnapshotInput[]): SnapshotInput[] {
  return snapshots.map((s) => ({ ...s, data: { ...s.data, utterances: s.data.utterances.slice(-1) } }));
}

interface CommitSamples {
  full: Record<BackendName, number[]>;
  delta: Record<BackendName, number[]>;
}

/**
 * ≥ 50 commits of one 8-agent round: one item's 8 turns + 8 mid-run snapshots; interleaved with the same
 * commits carrying last-utterance-only snapshots (what the snapshot size costs).
 */
async function commitRounds(backends: Backend[], history: HistoryRound[]): Promise<CommitSamples> {
  const mid = history[1]!;
  const small = lastUtteranceOnly(mid.snapshots);
  const out: CommitSamples = { full: { pglite: [], pg: [] }, delta: { pglite: [], pg: [] } };
  const series = [
    { runId: `${PREFIX}-commit`, snapshots: mid.snapshots, samples: out.full },
    { runId: `${PREFIX}-commit-delta`, snapshots: small, samples: out.delta },
  ];
  for (const b of backends)
    for (const { runId } of series)
      await b.store.createRun({
        runId,
        scenario: 'agent8-storm',
        totalRounds: WARMUP + COMMITS,
        machineVersion: AGENT_MACHINE_VERSION,
      });
  for (let k = 1; k <= WARMUP + COMMITS; k++) {
    const itemTurns = mid.turns.slice(((k - 1) % 35) * 8, ((k - 1) % 35) * 8 + 8);
    for (const b of ordered(backends, k)) {
      for (const { runId, snapshots, samples } of series) {
        const [, ms] = await timed(() =>
          b.store.commitRound({ runId, round: k, turns: itemTurns, snapshots }),
        );
        if (k > WARMUP) samples[b.name].push(ms);
      }
    }
  }
  return out;
}

interface ResumeSample {
  totalMs: number;
  loadMs: number;
  rebuildMs: number;
  peersMs: number;
}

/** Resumes a committed run: get, mark running, load snapshots, rebuild agents, read last round's answers. */
async function resume(b: Backend, runId: string): Promise<ResumeSample> {
  const { runtime, definitions } = agent8Storm();
  const t0 = performance.now();
  const run = await b.store.getRun(runId);
  if (!run) throw new Error(`run ${runId} is missing`);
  await b.store.setRunStatus(runId, 'running');
  const snapshots = await b.store.loadLatestSnapshots(runId, { machineVersion: AGENT_MACHINE_VERSION });
  const memories: Record<string, AgentMemory> = {};
  for (const [agent, snap] of Object.entries(snapshots)) {
    memories[agent] = {
      utterances: snap.data.utterances as AgentMemory['utterances'],
      slots: snap.data.memory as AgentMemory['slots'],
      toolResults: snap.data.toolResults as AgentMemory['toolResults'],
    };
  }
  const t1 = performance.now();
  const executor = createBreakwaterExecutor({
    config: runtime,
    agents: definitions,
    memories,
    clock: systemClock,
    memo: storeCallMemo(b.store, runId),
    createEngine: scriptedEngine,
  });
  const t2 = performance.now();
  const peers = await b.store.listTurns(runId, { round: run.currentRound });
  const ready = executor.supervisor.agents().every((h) => h.state() === 'idle');
  const t3 = performance.now();
  if (!ready) throw new Error('a resumed agent is not idle');
  if (peers.length !== 280) throw new Error(`expected 280 turns in the last round, read ${peers.length}`);
  // An agent's memory is the window its prompt reads: its last `historyTurns` answers (of the 105 it gave).
  const window = runtime.agentDefaults?.historyTurns ?? 6;
  for (const d of definitions) {
    const n = executor.memory(d.name).utterances.length;
    if (n !== window)
      throw new Error(`${d.name} resumed with ${n} utterances, expected the last ${window} of 105`);
  }
  await executor.stop();
  return { totalMs: t3 - t0, loadMs: t1 - t0, rebuildMs: t2 - t1, peersMs: t3 - t2 };
}

/** Whole agent8-storm runs (3 committed rounds of 280 turns), each then resumed. */
async function runsAndResumes(
  backends: Backend[],
  history: HistoryRound[],
): Promise<{ roundCommits: Record<BackendName, number[]>; resumes: Record<BackendName, ResumeSample[]> }> {
  const roundCommits: Record<BackendName, number[]> = { pglite: [], pg: [] };
  const resumes: Record<BackendName, ResumeSample[]> = { pglite: [], pg: [] };
  // One run more than measured: the first warms each backend's resume path (JIT, plans, caches).
  for (let r = 0; r <= RUNS; r++) {
    for (const b of ordered(backends, r)) {
      const runId = `${PREFIX}-run-${r}`;
      await b.store.createRun({
        runId,
        scenario: 'agent8-storm',
        totalRounds: 4,
        machineVersion: AGENT_MACHINE_VERSION,
      });
      for (const h of history) {
        const [, ms] = await timed(() =>
          b.store.commitRound({ runId, round: h.round, turns: h.turns, snapshots: h.snapshots }),
        );
        if (r > 0) roundCommits[b.name].push(ms);
      }
    }
    for (const b of ordered(backends, r + 1)) {
      const sample = await resume(b, `${PREFIX}-run-${r}`);
      if (r > 0) resumes[b.name].push(sample);
    }
    process.stdout.write('.');
  }
  process.stdout.write('\n');
  return { roundCommits, resumes };
}

async function main(): Promise<void> {
  console.log('building agent8-storm history through the runtime (8 agents × 35 items × 3 rounds)');
  const history = await buildAgent8History(3);
  const mid = history[1]!;
  const last = history[2]!;
  const sizes = {
    eightTurnsBytes: jsonBytes(mid.turns.slice(0, 8)),
    snapshotBytesMidRun: jsonBytes(mid.snapshots),
    snapshotBytesLastUtteranceOnly: jsonBytes(lastUtteranceOnly(mid.snapshots)),
    snapshotBytesAfter105Turns: jsonBytes(last.snapshots),
    scenarioRoundBytes: jsonBytes(mid.turns) + jsonBytes(mid.snapshots),
  };
  const backends = await openBackends();
  let commitSamples: CommitSamples;
  let runs: Awaited<ReturnType<typeof runsAndResumes>>;
  try {
    console.log(`commits: ${WARMUP} warm-up + ${COMMITS} measured per backend, interleaved`);
    commitSamples = await commitRounds(backends, history);
    console.log(`runs: ${RUNS} agent8-storm runs (3 rounds of 280 turns) per backend, each resumed`);
    runs = await runsAndResumes(backends, history);
  } finally {
    for (const b of backends) await b.cleanup().catch((e) => console.error(`cleanup ${b.name}:`, e));
  }

  const med = (xs: number[]) => round(percentile(xs, 50));
  const commits = commitSamples.full;
  const view = (name: BackendName) => {
    const r = runs.resumes[name];
    return {
      commitP50Ms: med(commits[name]),
      resumeMs: med(r.map((s) => s.totalMs)),
      commitP90Ms: round(percentile(commits[name], 90)),
      commitLastUtteranceSnapshotsP50Ms: med(commitSamples.delta[name]),
      commits: commits[name].length,
      scenarioRoundCommitP50Ms: med(runs.roundCommits[name]),
      scenarioRoundCommits: runs.roundCommits[name].length,
      resumeBreakdownMs: {
        getRunAndLoadSnapshots: med(r.map((s) => s.loadMs)),
        rebuildAgents: med(r.map((s) => s.rebuildMs)),
        readLastRoundAnswers: med(r.map((s) => s.peersMs)),
      },
      resumes: r.length,
      openMs: round(backends.find((b) => b.name === name)!.openMs, 0),
    };
  };
  const pglite = view('pglite');
  const pg = view('pg');
  const targets = { pg: { commitP50Ms: 5, resumeMs: 1_000 } };
  const met = {
    pg: {
      commitP50Ms: pg.commitP50Ms <= targets.pg.commitP50Ms,
      resumeMs: pg.resumeMs <= targets.pg.resumeMs,
    },
  };
  const mark = (ok: boolean) => (ok ? 'met' : 'MISSED');

  console.log();
  console.log(row('', 'PGlite', 'PostgreSQL', 'PGlite ÷ PG'));
  const line = (label: string, a: number, b: number) => console.log(row(label, a, b, round(a / b, 2)));
  line('commit 8-agent round p50 (ms)', pglite.commitP50Ms, pg.commitP50Ms);
  line('commit 8-agent round p90 (ms)', pglite.commitP90Ms, pg.commitP90Ms);
  line(
    '  same, snapshots of 1 utterance',
    pglite.commitLastUtteranceSnapshotsP50Ms,
    pg.commitLastUtteranceSnapshotsP50Ms,
  );
  line('commit 280-turn round p50 (ms)', pglite.scenarioRoundCommitP50Ms, pg.scenarioRoundCommitP50Ms);
  line('resume 105-turn run p50 (ms)', pglite.resumeMs, pg.resumeMs);
  line(
    '  get run + load snapshots',
    pglite.resumeBreakdownMs.getRunAndLoadSnapshots,
    pg.resumeBreakdownMs.getRunAndLoadSnapshots,
  );
  line('  rebuild 8 agents', pglite.resumeBreakdownMs.rebuildAgents, pg.resumeBreakdownMs.rebuildAgents);
  line(
    '  read last round answers',
    pglite.resumeBreakdownMs.readLastRoundAnswers,
    pg.resumeBreakdownMs.readLastRoundAnswers,
  );
  line('open + migrate (ms, not in resume)', pglite.openMs, pg.openMs);
  console.log();
  console.log(
    `payloads: 8 turns ${sizes.eightTurnsBytes} B, 8 snapshots mid-run ${sizes.snapshotBytesMidRun} B, ` +
      `after 105 turns ${sizes.snapshotBytesAfter105Turns} B, a 280-turn round ${sizes.scenarioRoundBytes} B`,
  );
  console.log(
    `PostgreSQL: commit p50 ${pg.commitP50Ms} ms (target ≤ ${targets.pg.commitP50Ms}: ${mark(met.pg.commitP50Ms)}), ` +
      `resume ${pg.resumeMs} ms (target ≤ ${targets.pg.resumeMs}: ${mark(met.pg.resumeMs)})`,
  );
  const path = await writeResult('durability', {
    pg,
    pglite,
    targets,
    met,
    sizes,
    measuredAs: {
      commit:
        'store.commitRound of 8 turns (one agenda item, every agent) + 8 agent snapshots at 70 turns each, p50 after warm-up; commitLastUtteranceSnapshots = the same with snapshots cut to their last utterance (diagnostic: the cost of snapshot size); scenarioRound = the runner’s real agent8-storm round (280 turns + 8 snapshots)',
      resume:
        'getRun + setRunStatus + loadLatestSnapshots + createBreakwaterExecutor(memories) + listTurns(last round); 8 agents × 105 turns; open/migrate not included (openMs)',
      pglite: 'file-backed temp dataDir',
      pg: 'DATABASE_URL or postgres://postgres@127.0.0.1:5432/test, pg pool of 10',
    },
  });
  console.log(`wrote ${path}`);
}

await main();
