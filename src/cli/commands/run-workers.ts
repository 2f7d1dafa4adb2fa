import type { Registry } from 'prom-client';
import { createLiveView, type LiveStream, type LiveView } from '../../live/live-view.ts';
import { createBreakwaterMetrics } from '../../observability/prometheus-metrics.ts';
import type { MetricsServer } from '../../observability/metrics-server.ts';
import { redactUrl, scrubSecrets } from '../../redact/secret-scrubber.ts';
import { formatRunReport } from '../../report/format-report.ts';
import { loadRunReport } from '../../report/load-run-report.ts';
import type { RunReport } from '../../report/report-types.ts';
import { loadScenario, resolveScenario } from '../../scenarios/load-scenario.ts';
import type { BreakwaterDatabase } from '../../store/open-database.ts';
import { createLiveEventLog, type LiveEventLog } from '../../store/event-log.ts';
import { createRunStore } from '../../store/run-store.ts';
import { startVizServer, type VizServer } from '../../viz/viz-server.ts';
import { createLogLiveSource, type LogLiveSource } from '../../viz/log-live-source.ts';
import { isWorkerRun, resumeWorkerRun } from '../../runs/workers/resume-worker-run.ts';
import { turnsByWorker } from '../../runs/workers/round-parts.ts';
import { notifyRound } from '../../runs/workers/round-wakeup.ts';
import { runLogMetricsSource } from '../../runs/workers/run-log-metrics.ts';
import { createRunEventTail, type RunEventTail } from '../../runs/workers/run-event-tail.ts';
import {
  startWorkerRun,
  type WorkerRun,
  WorkersNeedPostgresError,
} from '../../runs/workers/start-worker-run.ts';
import { createWorkerEventRecorder } from '../../runs/workers/worker-event-recorder.ts';
import { COORDINATION_URL_ENV, coordinationBackendOf } from '../../runs/workers/worker-coordination.ts';
import { requireCliEntry } from '../cli-entry.ts';
import { CliError } from '../cli-error.ts';
import { type Print, printToStdout } from '../cli-output.ts';
import { openCliDatabase, storeUrl } from '../cli-store.ts';
import { STOP_GRACE_MS } from '../stop-signal.ts';
import { startWorkerProcesses, type WorkerExit, whyItDied } from './worker-processes.ts';
import { WORKER_STORE_POOL_SIZE } from '../../runs/workers/worker-store-pool.ts';

/** Options of {@link runWithWorkers}. */
export interface RunWithWorkersOptions {
  readonly scenario?: string;
  /** How many local worker processes (≥ 1). With `resumeRunId`: default as many as the run was started with. */
  readonly workers?: number;
  /** Continue this run (started with `--workers`) instead of starting one. Default: a new run. */
  readonly resumeRunId?: string;
  /** The PostgreSQL store (default: env `DATABASE_URL`). */
  readonly databaseUrl?: string;
  readonly runId?: string;
  /** Control URL of a running emulator. Default: one started here, on the run's clock. */
  readonly emulatorUrl?: string;
  /**
   * Where the workers share the global tokens and endpoint health (checked by the caller): `postgres://…` or
   * `redis://…`, and for Redis its key prefix. Default: the run's PostgreSQL store.
   */
  readonly coordination?: { readonly url: string; readonly keyPrefix?: string };
  readonly json?: boolean;
  /**
   * Show the live view, fed from the run's event log in the store (every worker's events, each agent's line saying
   * which worker runs it). Default true (not with `json`).
   */
  readonly live?: boolean;
  /** Where the live view writes. Default `process.stdout`. */
  readonly liveOut?: LiveStream;
  /** Every worker streams its turns; their texts as they grow reach the live view (and `onText`). Default false. */
  readonly stream?: boolean;
  /** With `stream`: an agent's text of its running turn after every change, whichever worker asks it. Default none. */
  readonly onText?: (agent: string, text: string) => void;
  /** Serve the visualizer of the whole run (every worker's events) on 127.0.0.1 (0 = any free port). Default off. */
  readonly vizPort?: number;
  /** A `/metrics` server already listening, and its registry: the whole run's metrics are registered there. */
  readonly metrics?: { readonly server: MetricsServer; readonly registry: Registry };
  readonly print?: Print;
  /** Where a dead worker's stderr is shown. Default `process.stderr`. */
  readonly printErr?: (text: string) => void;
  readonly signal?: AbortSignal;
}

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
  let tail: RunEventTail | undefined;
  let live: LiveView | undefined;
  let viz: VizServer | undefined;
  let vizSource: LogLiveSource | undefined;
  let detachMetrics: (() => void) | undefined;
  let emulatorClose: (() => Promise<void>) | undefined;
  let stopWorkers: (() => void) | undefined;
  try {
    const store = createRunStore(database);
    const previous = options.resumeRunId !== undefined ? await store.getRun(options.resumeRunId) : undefined;
    if (options.resumeRunId !== undefined && !previous)
      throw new CliError(
        `no run "${options.resumeRunId}" in ${database.location}; list runs with \`breakwater runs\``,
      );
    if (previous && !isWorkerRun(previous))
      throw new CliError(
        `run ${previous.runId} was run in one process; resume it without --workers (\`breakwater resume ${previous.runId}\`)`,
      );
    const started = previous
      ? previous.status === 'completed'
        ? undefined
        : await resumeWorkerRun({
            database,
            run: previous,
            ...(options.workers !== undefined ? { workers: options.workers } : {}),
            ...(options.emulatorUrl ? { emulatorUrl: options.emulatorUrl } : {}),
          })
      : await startNew(options, database);
    if (!started) return await printReport(options, database, previous!.runId, undefined, print);
    emulatorClose = started.emulator ? () => started.emulator!.close() : undefined;
    const count = started.workers.count;
    const showLive = options.live !== false && !options.json;
    const note = (line: string) =>
      options.json ? process.stderr.write(`${scrubSecrets(line)}\n`) : live ? live.log(line) : print(line);
    const shared = options.coordination
      ? `${coordinationBackendOf(options.coordination.url) === 'redis' ? 'Redis' : 'PostgreSQL'} at ${redactUrl(options.coordination.url)}`
      : started.workers.coordination
        ? `${started.workers.coordination.backend === 'redis' ? 'Redis' : 'PostgreSQL'} at ${started.workers.coordination.url}`
        : 'the store';
    note(
      `run ${started.runId}: scenario ${started.scenario}, ${started.rounds} rounds, ${count} workers on postgres, tokens and endpoint health shared on ${shared}` +
        (started.resumedFrom !== undefined ? `, resumed after round ${started.resumedFrom}` : ''),
    );
    // The parent shows the whole run from the log every worker appends to: each tick reads only what is new.
    // A resumed run is shown from its resumption on, as a one-process resume shows it.
    // It reads the workers' live stream (what they hear as it happens), not the committed log (a round's events
    // reach it with the round's commit).
    const liveLog = createLiveEventLog(database);
    const sinceSeq = started.resumedFrom !== undefined ? await firstSeqOfResume(liveLog, started.runId) : 0;
    tail = createRunEventTail(liveLog, started.runId, { afterSeq: sinceSeq });
    if (options.vizPort !== undefined) {
      vizSource = createLogLiveSource(tail, { runId: started.runId, store, limit: started.tokenLimit });
      viz = await startVizServer({ port: options.vizPort, live: vizSource, store });
    }
    if (options.metrics) {
      const feed =
        vizSource ?? createLogLiveSource(tail, { runId: started.runId, limit: started.tokenLimit });
      const metrics = createBreakwaterMetrics(runLogMetricsSource(tail, feed, started.clock), {
        registry: options.metrics.registry,
      });
      detachMetrics = () => {
        metrics.detach();
        if (feed !== vizSource) feed.close();
      };
    }
    if (showLive) live = startLive(options, tail, started);
    if (viz) note(`visualizer: ${viz.url}`);
    if (options.metrics) note(`metrics: ${options.metrics.server.url}`);
    const texts = new Map<string, string>();
    // The coordination URL (its password too) reaches the workers through their environment, never their argv
    // (which any local user can read); without one, an inherited variable must not send them elsewhere.
    const env: NodeJS.ProcessEnv = { ...process.env };
    if (options.coordination) env[COORDINATION_URL_ENV] = options.coordination.url;
    else delete env[COORDINATION_URL_ENV];
    const workers = startWorkerProcesses({
      entry,
      count,
      databaseUrl: url,
      runId: started.runId,
      env,
      ...(options.stream ? { stream: true } : {}),
      onMessage: (m) => {
        if (m.type === 'text') {
          const text = m.add !== undefined ? (texts.get(m.agent) ?? '') + m.add : (m.text ?? '');
          texts.set(m.agent, text);
          live?.setText(m.agent, text);
          options.onText?.(m.agent, text);
        } else if (live) {
          // The live view shows the turns from their events: the workers' own lines would say it twice.
        } else if (m.type === 'turn')
          note(`worker ${m.worker}  run ${m.runId}  round ${m.round}  ${m.itemId}  ${m.agent}  ${m.outcome}`);
        else if (m.type === 'commit') note(`committed round ${m.round} of ${m.runId}`);
      },
    });
    stopWorkers = () => workers.stop();
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
    live?.stop();
    live = undefined;
    const run = await store.getRun(started.runId);
    if (run?.status !== 'completed') {
      const aborted = options.signal?.aborted === true;
      // A worker dead before joining, whichever of the race's sides saw the end first.
      const deadAtStart = first ?? (aborted ? undefined : ended.find((e) => !e.joined && e.code !== 0));
      throw await runEnded(database, started, ended, deadAtStart, aborted, printErr);
    }
    return await printReport(options, database, started.runId, started, print, vizSource);
  } finally {
    stopWorkers?.();
    tail?.close();
    live?.stop();
    detachMetrics?.();
    await viz?.close();
    vizSource?.close();
    await emulatorClose?.();
    await database.close();
  }
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

/** The `seq` just before the resumed run's `run.started`: the live view and the visualizer start there. */
async function firstSeqOfResume(store: Pick<LiveEventLog, 'readEvents'>, runId: string): Promise<number> {
  let last = 0;
  let resumedAt = 0;
  for (;;) {
    const page = await store.readEvents(runId, { afterSeq: last, limit: 1_000 });
    for (const e of page) if (e.type === 'run.started') resumedAt = e.seq;
    if (page.length < 1_000) return Math.max(0, resumedAt - 1);
    last = page[page.length - 1]!.seq;
  }
}

function startLive(options: RunWithWorkersOptions, tail: RunEventTail, started: WorkerRun): LiveView {
  const live = createLiveView({
    source: tail,
    ...(options.liveOut ? { out: options.liveOut } : {}),
    title: `${started.scenario}  run ${started.runId}  ${started.workers.count} workers`,
  });
  const done = new Map<number, number>();
  let round = (started.resumedFrom ?? 0) + 1;
  const progress = () =>
    live.setProgress({
      round,
      rounds: started.rounds,
      // A worker killed after flushing some turns' events has them asked again by another: never past the total.
      done: Math.min(done.get(round) ?? 0, started.turnsPerRound[round - 1] ?? 0),
      total: started.turnsPerRound[round - 1] ?? 0,
    });
  tail.subscribeEvents((e) => {
    if (e.type === 'run.started') progress();
    else if (e.type === 'turn.completed' && typeof e.data.round === 'number') {
      done.set(e.data.round, (done.get(e.data.round) ?? 0) + 1);
      if (e.data.round === round) progress();
    } else if (e.type === 'round.committed') {
      round = Math.min(started.rounds, Number(e.data.round) + 1);
      progress();
    }
  });
  return live;
}

/**
 * The error for a run that did not complete: interrupted (kept for `resume`), a worker dead at start (its stderr
 * shown, the run failed), or every worker gone before the end (the run failed, resumable).
 */
async function runEnded(
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
  vizSource?.publish({
    type: 'viz.report',
    at: started?.clock.now() ?? Date.now(),
    data: {
      status: report.status,
      checks: report.checks.map((c) => ({
        id: c.id,
        name: c.name,
        value: c.value,
        unit: c.unit,
        op: c.op,
        threshold: c.threshold,
        pass: c.pass,
      })),
    },
  });
  if (options.json) print(JSON.stringify(report));
  else for (const line of formatRunReport(report)) print(line);
  return report;
}
