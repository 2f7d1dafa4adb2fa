import { execFileSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Emulator } from '../../src/emulator/emulator-server.ts';
import { mulberry32, ROUNDS } from '../rounds/crash-drill.ts';
import {
  byTurn,
  type CrashBackend,
  type Child,
  checkCalls,
  checkCompleted,
  checkEvents,
  cli,
  type Durable,
  durable,
  terminateConnections,
  workerPids,
} from './crash-harness.ts';

/*
 * The crash suite's drills: one process (`run`, then `resume` after each kill) and `--workers 3` (a worker killed,
 * the parent killed, the children's database connections terminated, workers killed at a crash point; then
 * `breakwater resume` finishes the run). Kill moments come from a seeded source, so a failure replays.
 */

/** What a drill counted, for the suite's note. */
export interface DrillCounts {
  kills: number;
  runs: number;
  committedTurns: number;
  degraded: number;
  answeredUpstream: number;
  inFlightReasked: number;
  byKind: Record<string, number>;
  violations: string[];
}

export interface DrillContext {
  readonly backend: CrashBackend;
  readonly emulator: Emulator;
  readonly scenarioFile: string;
  readonly baseline: { readonly turns: ReadonlyMap<string, string>; readonly degraded: number };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const common = (c: DrillContext) => [
  '--emulator-url',
  c.emulator.controlURL,
  ...c.backend.flags,
  '--json',
  '--no-live',
];
/** The emulator's last sequence number handed out (calls still in flight included: theirs are lower). */
const lastSeq = (e: Emulator) => {
  const s = e.stats();
  return s.totalCalls + s.inFlight;
};

/**
 * The uninterrupted run a drill compares with: its committed turns (without the run id) and degraded count. With
 * `workers`, a `--workers N` run: its rounds list the turns by part, so the next round's prompts (and answers) differ
 * from a one-process run's.
 */
export async function uninterrupted(c: Omit<DrillContext, 'baseline'>, runId: string, workers?: number) {
  const args = ['run', c.scenarioFile, '--run-id', runId, ...(workers ? ['--workers', String(workers)] : [])];
  const done = await cli([...args, ...common({ ...c, baseline: { turns: new Map(), degraded: 0 } })]).exit;
  if (done.code !== 0) throw new Error(`the uninterrupted run failed (${done.code}): ${done.stderr.trim()}`);
  const d = await durable(c.backend, runId);
  const turns = byTurn(runId, d);
  return { turns, degraded: [...turns.values()].filter((v) => v.startsWith('["degraded"')).length };
}

/** Committed turns before a phase that are gone or different after it. */
function lostOrChanged(runId: string, before: Durable, after: Durable): string[] {
  const out: string[] = [];
  for (const [k, v] of before.turns)
    if (after.turns.get(k) !== v)
      out.push(`${runId}: committed turn ${k} ${after.turns.has(k) ? 'changed' : 'lost'}`);
  return out;
}

async function finishRun(
  c: DrillContext,
  runId: string,
  phases: { fromSeq: number; before: Durable }[],
  counts: DrillCounts,
  known?: Durable,
) {
  const last = known ?? (await durable(c.backend, runId));
  const done = checkCompleted(runId, last, c.baseline);
  const calls = checkCalls(c.emulator, runId, phases, last.memoAt);
  counts.runs++;
  counts.committedTurns += done.turns;
  counts.degraded += done.degraded;
  counts.answeredUpstream += calls.answered;
  counts.inFlightReasked += calls.inFlightReasked;
  counts.violations.push(...done.violations, ...calls.violations);
}

/**
 * One process: `run` then `resume`, each killed with SIGKILL at a seeded moment — a time after start (the start,
 * the restore, mid-round), right after a round's commit (`after-commit`: before anything written after it), or in
 * the middle of a resume's restore (`restore`) — until `kills` kills are done; every run is then finished.
 */
export async function singleProcessDrill(c: DrillContext, kills: number, seed: number): Promise<DrillCounts> {
  const random = mulberry32(seed);
  const counts: DrillCounts = {
    kills: 0,
    runs: 0,
    committedTurns: 0,
    degraded: 0,
    answeredUpstream: 0,
    inFlightReasked: 0,
    byKind: {},
    violations: [],
  };
  for (let r = 0; counts.kills < kills && r < 12; r++) {
    const runId = `crash-${c.backend.name}-${seed}-${r}`;
    const phases: { fromSeq: number; before: Durable }[] = [];
    let finished = false;
    let known: Durable | undefined;
    for (let attempt = 0; attempt < 40 && !finished; attempt++) {
      // Nothing runs between two starts: what the last one left is what the next one finds.
      const before = known ?? (await durable(c.backend, runId));
      phases.push({ fromSeq: lastSeq(c.emulator), before });
      const args = before.exists
        ? ['resume', runId, ...common(c)]
        : ['run', c.scenarioFile, '--run-id', runId, ...common(c)];
      let kind = 'none';
      const env: Record<string, string> = {};
      let killAfter: number | undefined;
      if (counts.kills < kills) {
        // The first kill of every drill lands right after a commit: the window where the log used to lose events.
        const pick = counts.kills === 0 ? 0 : random();
        if (pick < 0.3 && before.currentRound < ROUNDS) {
          kind = 'after-commit';
          env.BREAKWATER_CRASH_POINT = `after-commit:${1 + Math.floor(random() * (ROUNDS - before.currentRound))}`;
        } else if (pick < 0.45 && before.exists) {
          kind = 'restore';
          env.BREAKWATER_CRASH_POINT = 'restore';
        } else {
          kind = 'time';
          // The CLI starts in about a second: kill points spread over the start, the restore and the rounds.
          killAfter = 700 + Math.floor(random() * 2_300);
        }
      }
      const child = cli(args, env);
      const timer =
        killAfter === undefined ? undefined : setTimeout(() => child.process.kill('SIGKILL'), killAfter);
      const outcome = await child.exit;
      clearTimeout(timer);
      const after = await durable(c.backend, runId);
      known = after;
      counts.violations.push(...lostOrChanged(runId, before, after), ...checkEvents(runId, after));
      if (outcome.killed) {
        counts.kills++;
        counts.byKind[kind] = (counts.byKind[kind] ?? 0) + 1;
      } else if (outcome.code === 0) finished = true;
      else
        counts.violations.push(
          `${runId}: exited ${outcome.code}: ${outcome.stderr.trim().split('\n').pop()}`,
        );
    }
    if (!finished) counts.violations.push(`${runId}: not finished after 40 starts`);
    await finishRun(c, runId, phases, counts, known);
  }
  return counts;
}

/** The pids of a process's children (the parent's workers). */
function childPids(pid: number): number[] {
  try {
    return execFileSync('ps', ['-o', 'pid=', '--ppid', String(pid)], { encoding: 'utf8' })
      .split('\n')
      .map((s) => Number(s.trim()))
      .filter((n) => n > 0);
  } catch {
    return [];
  }
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Waits (bounded) for a run's open round to have parts held, so a kill lands on a worker at work. */
async function partsHeld(url: string, runId: string, maxMs = 60_000): Promise<number[]> {
  for (let waited = 0; waited < maxMs; waited += 100) {
    const pids = await workerPids(url, runId).catch(() => []);
    if (pids.length > 0) return pids;
    await sleep(100);
  }
  return [];
}

/**
 * `run --workers 3` on PostgreSQL, one fault per run in turn (seeded timing), then `breakwater resume` finishes what
 * is left, until `kills` faults are done. A crash point kills every worker that reaches it (each stages and may
 * commit), so `after-stage` / `after-commit` stop the run's workers at that moment.
 */
export async function workersDrill(c: DrillContext, kills: number, seed: number): Promise<DrillCounts> {
  const url = c.backend.url;
  if (!url) throw new Error('workers need the PostgreSQL backend');
  const random = mulberry32(seed);
  const counts: DrillCounts = {
    kills: 0,
    runs: 0,
    committedTurns: 0,
    degraded: 0,
    answeredUpstream: 0,
    inFlightReasked: 0,
    byKind: {},
    violations: [],
  };
  const faults = ['kill-worker', 'kill-parent', 'terminate', 'after-commit', 'after-stage'] as const;
  for (let r = 0; counts.kills < kills && r < 2 * kills + 2; r++) {
    const runId = `crash-workers-${seed}-${r}`;
    const kind = faults[r % faults.length]!;
    const phases: { fromSeq: number; before: Durable }[] = [];
    const before = await durable(c.backend, runId);
    phases.push({ fromSeq: lastSeq(c.emulator), before });
    const noted = join(tmpdir(), `bw-crash-point-${runId}-${process.pid}`);
    rmSync(noted, { force: true });
    const env: Record<string, string> = { BREAKWATER_CRASH_POINT_LOG: noted };
    if (kind === 'after-commit')
      env.BREAKWATER_CRASH_POINT = `after-commit:${1 + Math.floor(random() * (ROUNDS - 1))}`;
    if (kind === 'after-stage')
      env.BREAKWATER_CRASH_POINT = `after-stage:${1 + Math.floor(random() * (ROUNDS - 1))}`;
    const parent: Child = cli(
      ['run', c.scenarioFile, '--workers', '3', '--run-id', runId, ...common(c)],
      env,
    );
    let struck = kind === 'after-commit' || kind === 'after-stage';
    if (!struck) {
      const held = await partsHeld(url, runId);
      await sleep(Math.floor(random() * 1_500));
      if (held.length > 0 && parent.process.exitCode === null) {
        if (kind === 'kill-worker') {
          const pid = held[Math.floor(random() * held.length)]!;
          struck = alive(pid) && process.kill(pid, 'SIGKILL');
        } else if (kind === 'kill-parent') {
          // The parent and its workers at once (a machine or a container going down): none writes anything after.
          const workers = childPids(parent.process.pid!);
          struck = parent.process.kill('SIGKILL');
          for (const pid of workers) if (alive(pid)) process.kill(pid, 'SIGKILL');
        } else struck = (await terminateConnections(url)) > 0;
      }
    }
    const outcome = await parent.exit;
    if (kind === 'after-commit' || kind === 'after-stage') {
      // The crash point kills one worker: the run finishes with the others (the parent exits 0) or is continued.
      // Counted only when it happened (a worker may commit or stage fewer times than the point's number).
      struck = existsSync(noted);
      rmSync(noted, { force: true });
    }
    if (struck) {
      counts.kills++;
      counts.byKind[kind] = (counts.byKind[kind] ?? 0) + 1;
    }
    const mid = await durable(c.backend, runId);
    counts.violations.push(...lostOrChanged(runId, before, mid), ...checkEvents(runId, mid));
    if (outcome.code !== 0 && !outcome.killed && mid.status === 'completed')
      counts.violations.push(`${runId}: the parent exited ${outcome.code} on a completed run`);
    // What is left is finished as the parent's message says: `breakwater resume <run>` (it starts the workers again).
    for (
      let attempt = 0;
      attempt < 5 && (await durable(c.backend, runId)).status !== 'completed';
      attempt++
    ) {
      const resumeBefore = await durable(c.backend, runId);
      phases.push({ fromSeq: lastSeq(c.emulator), before: resumeBefore });
      const end = await cli(['resume', runId, ...common(c)]).exit;
      const after = await durable(c.backend, runId);
      counts.violations.push(...lostOrChanged(runId, resumeBefore, after), ...checkEvents(runId, after));
      if (end.code !== 0)
        counts.violations.push(`${runId}: resume exited ${end.code}: ${end.stderr.trim().split('\n').pop()}`);
    }
    await finishRun(c, runId, phases, counts);
  }
  return counts;
}

/** One line per drill for the suite's note. */
export function note(name: string, k: DrillCounts): string {
  const kinds = Object.entries(k.byKind)
    .map(([kind, n]) => `${kind} ${n}`)
    .join(', ');
  return `${name}: ${k.kills} kills (${kinds}) over ${k.runs} runs; ${k.committedTurns} committed turns, ${k.degraded} degraded; ${k.answeredUpstream} calls answered upstream, ${k.inFlightReasked} answered in flight at a kill and asked again; ${k.violations.length} violations`;
}

export const SCENARIO_FILE = (dir: string) => join(dir, 'scenario.yaml');
