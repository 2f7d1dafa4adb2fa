import { notifyRound } from '../../runs/workers/round-wakeup.ts';
import type { WorkerRun } from '../../runs/workers/start-worker-run.ts';
import { createWorkerEventRecorder } from '../../runs/workers/worker-event-recorder.ts';
import type { BreakwaterDatabase } from '../../store/open-database.ts';
import { createRunStore } from '../../store/run-store.ts';
import { CliError } from '../cli-error.ts';
import { type WorkerExit, whyItDied } from './worker-processes.ts';

/**
 * The error for a run that did not complete: interrupted (kept for `resume`), a worker dead at start (its stderr
 * shown, the run failed), or every worker gone before the end (the run failed, resumable).
 */
export async function runEnded(
  database: BreakwaterDatabase,
  started: WorkerRun,
  ended: readonly WorkerExit[],
  deadAtStart: WorkerExit | undefined,
  aborted: boolean,
  printErr: (text: string) => void,
): Promise<CliError> {
  const store = createRunStore(database);
  const { runId } = started;
  const resume = `continue it with \`breakwater resume ${runId}\``;
  if (aborted && !deadAtStart) {
    await markRun(database, runId, 'interrupted', started, undefined);
    return new CliError(`run ${runId} interrupted; ${resume}`, { exitCode: 130 });
  }
  const dead = deadAtStart ?? ended.find((e) => e.code !== 0);
  const how = (e: WorkerExit) =>
    `worker ${e.index} of ${ended.length}${e.pid !== undefined ? ` (pid ${e.pid})` : ''} ${
      e.signal ? `was killed by ${e.signal}` : `exited with code ${e.code}`
    }`;
  if (dead?.stderr.trim()) {
    const lines = dead.stderr.trimEnd().split('\n').slice(-40);
    printErr(`${how(dead)}; its stderr:\n${lines.map((l) => `  | ${l}`).join('\n')}\n`);
  }
  const why = dead ? whyItDied(dead.stderr) : '';
  const failure = deadAtStart
    ? `${how(deadAtStart)} before it joined the run${why ? `: ${why}` : ''}`
    : `every worker stopped before the run's end${dead ? `; ${how(dead)}${why ? `: ${why}` : ''}` : ''}`;
  const current = await store.getRun(runId);
  if (current?.status === 'running') await markRun(database, runId, 'failed', started, failure);
  return new CliError(
    `run ${runId} failed: ${failure}; ${deadAtStart ? 'fix the cause, then ' : ''}${resume}`,
  );
}

/** Marks the run, and says so in its log (the visualizer and a replay show how it ended). */
async function markRun(
  database: BreakwaterDatabase,
  runId: string,
  status: 'failed' | 'interrupted',
  started: WorkerRun,
  failure: string | undefined,
): Promise<void> {
  const recorder = createWorkerEventRecorder(database, runId);
  recorder.listener({ type: 'run.finished', at: started.clock.now(), data: { runId, status } });
  await recorder.flush().catch(() => {});
  await createRunStore(database).setRunStatus(runId, status, failure ? { failure } : {});
  // Workers at the round barrier (on other machines too) return now, not at their next poll.
  await notifyRound(database, runId);
}
