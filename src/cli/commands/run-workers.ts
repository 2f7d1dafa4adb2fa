import { redactUrl, scrubSecrets } from '../../redact/secret-scrubber.ts';
import { formatRunReport } from '../../report/format-report.ts';
import { loadRunReport } from '../../report/load-run-report.ts';
import type { RunReport } from '../../report/report-types.ts';
import { loadScenario, resolveScenario } from '../../scenarios/load-scenario.ts';
import type { BreakwaterDatabase } from '../../store/open-database.ts';
import { createRunStore } from '../../store/run-store.ts';
import type { RunRecord } from '../../store/store-types.ts';
import type { LogLiveSource } from '../../viz/log-live-source.ts';
import { isWorkerRun, resumeWorkerRun } from '../../runs/workers/resume-worker-run.ts';
import { turnsByWorker } from '../../runs/workers/round-parts.ts';
import {
  startWorkerRun,
  type WorkerRun,
  WorkersNeedPostgresError,
} from '../../runs/workers/start-worker-run.ts';
import { COORDINATION_URL_ENV, coordinationBackendOf } from '../../runs/workers/worker-coordination.ts';
import { requireCliEntry } from '../cli-entry.ts';
import { CliError } from '../cli-error.ts';
import { type Print, printToStdout } from '../cli-output.ts';
import { openCliDatabase, storeUrl } from '../cli-store.ts';
import { STOP_GRACE_MS } from '../stop-signal.ts';
import type { RunWithWorkersOptions } from './run-workers-options.ts';
import { vizReportEvent } from './viz-report-event.ts';
import { runEnded } from './worker-run-end.ts';
import {
  closeWorkerRunWatch,
  newWorkerRunWatch,
  openWorkerRunWatch,
  type WorkerRunWatch,
} from './worker-run-watch.ts';
import { startWorkerProcesses, type WorkerProcesses } from './worker-processes.ts';
import { WORKER_STORE_POOL_SIZE } from '../../runs/workers/worker-store-pool.ts';

export type { RunWithWorkersOptions } from './run-workers-options.ts';

/**
 * `breakwater run <scenario> --workers N` (and `breakwater resume <run-id>` of such a run): creates (or resumes)
 * the run on a PostgreSQL store, starts N local `breakwater worker --run-id …` processes on it (one store, one
 * coordination pool, one emulator), shows the whole run from its event log (live view, visualizer, `/metrics`),
 * relays the workers' streamed texts, and prints the report with the turns each worker did. A worker that dies
 * before joining the run stops it: its stderr is shown, the run is marked failed, and this rejects.
 *
 * @example
 * ```ts
 * const report = await runWithWorkers({ scenario: 'morning-peak', workers: 3, databaseUrl });
 * ```
 */
export async function runWithWorkers(options: RunWithWorkersOptions): Promise<RunReport> {
  const print = options.print ?? printToStdout;
  const printErr = options.printErr ?? ((text: string) => process.stderr.write(text));
  if (
    options.workers !== undefined &&
    (!Number.isInteger(options.workers) || options.workers < 1 || options.workers > 64)
  )
    throw new CliError('--workers must be a whole number from 1 to 64');
  const url = storeUrl({ ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}) });
  if (!url) throw new CliError(new WorkersNeedPostgresError().message);
  let entry: string;
  try {
    entry = requireCliEntry();
  } catch (e) {
    throw new CliError((e as Error).message);
  }
  const database = await openCliDatabase({ databaseUrl: url, poolSize: WORKER_STORE_POOL_SIZE });
  const watch = newWorkerRunWatch();
  try {
    const store = createRunStore(database);
    const previous = options.resumeRunId !== undefined ? await store.getRun(options.resumeRunId) : undefined;
    const started = await startOrResume(options, database, previous);
    if (!started) return await printReport(options, database, previous!.runId, undefined, print);
    watch.emulatorClose = started.emulator ? () => started.emulator!.close() : undefined;
    const note = (line: string) =>
      options.json
        ? process.stderr.write(`${scrubSecrets(line)}\n`)
        : watch.live
          ? watch.live.log(line)
          : print(line);
    note(
      `run ${started.runId}: scenario ${started.scenario}, ${started.rounds} rounds, ${started.workers.count} workers on postgres, tokens and endpoint health shared on ${sharedOn(options, started)}` +
        (started.resumedFrom !== undefined ? `, resumed after round ${started.resumedFrom}` : ''),
    );
    const tail = await openWorkerRunWatch(watch, { options, database, store, started, note });
    const workers = startWorkers(options, { entry, url, started, watch, note });
    watch.stopWorkers = () => workers.stop();
    const onAbort = () => workers.stop();
    options.signal?.addEventListener('abort', onAbort, { once: true });
    // Stopped while the run was being set up: the workers just started stop at once.
    if (options.signal?.aborted) onAbort();
    const first = await Promise.race([
      workers.exited.then(() => undefined),
      workers.diedAtStart.then((dead) => dead),
    ]);
    if (first) {
      // One died before it joined: the others run the same entry in the same environment. Stop them all.
      workers.stop();
      const killer = setTimeout(() => workers.kill(), STOP_GRACE_MS);
      await workers.exited;
      clearTimeout(killer);
    }
    const ended = await workers.exited;
    options.signal?.removeEventListener('abort', onAbort);
    // The last events (the final commit's) are shown before the report.
    await tail.poll().catch(() => {});
    tail.close();
    watch.live?.stop();
    watch.live = undefined;
    const run = await store.getRun(started.runId);
    if (run?.status !== 'completed') {
      const aborted = options.signal?.aborted === true;
      // A worker dead before joining, whichever of the race's sides saw the end first.
      const deadAtStart = first ?? (aborted ? undefined : ended.find((e) => !e.joined && e.code !== 0));
      throw await runEnded(database, started, ended, deadAtStart, aborted, printErr);
    }
    return await printReport(options, database, started.runId, started, print, watch.vizSource);
  } finally {
    await closeWorkerRunWatch(watch);
    await database.close();
  }
}

/** The run to go on with: a new one, or the stored one resumed; `undefined` when it is complete already. */
async function startOrResume(
  options: RunWithWorkersOptions,
  database: BreakwaterDatabase,
  previous: RunRecord | undefined,
): Promise<WorkerRun | undefined> {
  if (options.resumeRunId !== undefined && !previous)
    throw new CliError(
      `no run "${options.resumeRunId}" in ${database.location}; list runs with \`breakwater runs\``,
    );
  if (previous && !isWorkerRun(previous))
    throw new CliError(
      `run ${previous.runId} was run in one process; resume it without --workers (\`breakwater resume ${previous.runId}\`)`,
    );
  return previous
    ? previous.status === 'completed'
      ? undefined
      : await resumeWorkerRun({
          database,
          run: previous,
          ...(options.workers !== undefined ? { workers: options.workers } : {}),
          ...(options.emulatorUrl ? { emulatorUrl: options.emulatorUrl } : {}),
        })
    : await startNew(options, database);
}

/** Where the workers share the global tokens and endpoint health, as the run's first line says it. */
function sharedOn(options: RunWithWorkersOptions, started: WorkerRun): string {
  return options.coordination
    ? `${coordinationBackendOf(options.coordination.url) === 'redis' ? 'Redis' : 'PostgreSQL'} at ${redactUrl(options.coordination.url)}`
    : started.workers.coordination
      ? `${started.workers.coordination.backend === 'redis' ? 'Redis' : 'PostgreSQL'} at ${started.workers.coordination.url}`
      : 'the store';
}

/**
 * Starts the run's worker processes; their streamed texts reach the live view (and `onText`), and without a
 * live view their own lines are noted.
 */
function startWorkers(
  options: RunWithWorkersOptions,
  run: {
    readonly entry: string;
    readonly url: string;
    readonly started: WorkerRun;
    readonly watch: Pick<WorkerRunWatch, 'live'>;
    readonly note: (line: string) => void;
  },
): WorkerProcesses {
  const { watch, note } = run;
  const texts = new Map<string, string>();
  // The coordination URL (its password too) reaches the workers through their environment, never their argv
  // (which any local user can read); without one, an inherited variable must not send them elsewhere.
  const env: NodeJS.ProcessEnv = { ...process.env };
  if (options.coordination) env[COORDINATION_URL_ENV] = options.coordination.url;
  else delete env[COORDINATION_URL_ENV];
  return startWorkerProcesses({
    entry: run.entry,
    count: run.started.workers.count,
    databaseUrl: run.url,
    runId: run.started.runId,
    env,
    ...(options.stream ? { stream: true } : {}),
    onMessage: (m) => {
      if (m.type === 'text') {
        const text = m.add !== undefined ? (texts.get(m.agent) ?? '') + m.add : (m.text ?? '');
        texts.set(m.agent, text);
        watch.live?.setText(m.agent, text);
        options.onText?.(m.agent, text);
      } else if (watch.live) {
        // The live view shows the turns from their events: the workers' own lines would say it twice.
      } else if (m.type === 'turn')
        note(`worker ${m.worker}  run ${m.runId}  round ${m.round}  ${m.itemId}  ${m.agent}  ${m.outcome}`);
      else if (m.type === 'commit') note(`committed round ${m.round} of ${m.runId}`);
    },
  });
}

async function startNew(options: RunWithWorkersOptions, database: BreakwaterDatabase): Promise<WorkerRun> {
  const scenarioSource = resolveScenario(options.scenario ?? 'agent8-storm');
  const scenario = loadScenario(scenarioSource);
  // Top-level `faults:` are acted out by a fault proxy in the process that runs the scenario: spread over workers,
  // each would need its own proxy and its own count of faults, so they are refused rather than dropped.
  if (scenario.faults?.length)
    throw new CliError(
      `--workers does not go with the scenario's faults: (${scenario.faults.map((f) => f.endpoint).join(', ')}) yet; ` +
        'drop them or run in one process',
    );
  return startWorkerRun({
    scenario,
    scenarioSource,
    database,
    workers: options.workers ?? 1,
    ...(options.runId ? { runId: options.runId } : {}),
    ...(options.emulatorUrl ? { emulatorUrl: options.emulatorUrl } : {}),
    ...(options.coordination ? { coordination: options.coordination } : {}),
  });
}

async function printReport(
  options: RunWithWorkersOptions,
  database: BreakwaterDatabase,
  runId: string,
  started: WorkerRun | undefined,
  print: Print,
  vizSource?: LogLiveSource,
): Promise<RunReport> {
  const store = createRunStore(database);
  const stats = started?.emulator?.stats();
  const report: RunReport = {
    ...(await loadRunReport(store, runId)),
    byWorker: await turnsByWorker(database, runId),
    ...(stats ? { emulator: { totalCalls: stats.totalCalls, maxInFlight: stats.maxInFlight } } : {}),
  };
  // The page shows the run's end with the report's verdicts before the server goes.
  vizSource?.publish(vizReportEvent(started?.clock.now() ?? Date.now(), report.status, report));
  if (options.json) print(JSON.stringify(report));
  else for (const line of formatRunReport(report)) print(line);
  return report;
}
