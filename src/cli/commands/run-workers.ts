import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { createLiveView, type LiveStream, type LiveView } from '../../live/live-view.ts';
import { redactUrl, scrubSecrets } from '../../redact/secret-scrubber.ts';
import { formatRunReport } from '../../report/format-report.ts';
import { loadRunReport } from '../../report/load-run-report.ts';
import type { RunReport } from '../../report/report-types.ts';
import { loadScenario, resolveScenario } from '../../scenarios/load-scenario.ts';
import { createRunStore } from '../../store/run-store.ts';
import { turnsByWorker } from '../../workers/round-parts.ts';
import { createRunEventTail, type RunEventTail } from '../../workers/run-event-tail.ts';
import { startWorkerRun, WorkersNeedPostgresError } from '../../workers/start-worker-run.ts';
import { COORDINATION_URL_ENV, coordinationBackendOf } from '../../workers/worker-coordination.ts';
import { CliError } from '../cli-error.ts';
import { type Print, printToStdout } from '../cli-output.ts';
import { openCliDatabase, storeUrl } from '../cli-store.ts';

/** The `breakwater` entry the workers are started with (this module keeps its own URL when bundled). */
const BIN = fileURLToPath(new URL('../../../bin/breakwater.js', import.meta.url));

/** Options of {@link runWithWorkers}. */
export interface RunWithWorkersOptions {
  readonly scenario?: string;
  /** How many local worker processes (≥ 1). */
  readonly workers: number;
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
  readonly print?: Print;
  readonly signal?: AbortSignal;
}

/**
 * `breakwater run <scenario> --workers N`: creates the run on a PostgreSQL store, starts N local
 * `breakwater worker --run-id …` processes on it (one store, one coordination pool, one emulator), relays their
 * lines (`worker <id> … <outcome>`), and prints the report with the turns each worker did.
 *
 * @example
 * ```ts
 * const report = await runWithWorkers({ scenario: 'morning-peak', workers: 3, databaseUrl });
 * ```
 */
export async function runWithWorkers(options: RunWithWorkersOptions): Promise<RunReport> {
  const print = options.print ?? printToStdout;
  if (!Number.isInteger(options.workers) || options.workers < 1 || options.workers > 64)
    throw new CliError('--workers must be a whole number from 1 to 64');
  const url = storeUrl({ ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}) });
  if (!url) throw new CliError(new WorkersNeedPostgresError().message);
  const database = await openCliDatabase({ databaseUrl: url });
  const children: ChildProcess[] = [];
  let tail: RunEventTail | undefined;
  let live: LiveView | undefined;
  let emulatorClose: (() => Promise<void>) | undefined;
  try {
    const scenarioSource = resolveScenario(options.scenario ?? 'agent8-storm');
    const scenario = loadScenario(scenarioSource);
    // Top-level `faults:` are acted out by a fault proxy in the process that runs the scenario: spread over workers,
    // each would need its own proxy and its own count of faults, so they are refused rather than dropped.
    if (scenario.faults?.length)
      throw new CliError(
        `--workers does not go with the scenario's faults: (${scenario.faults.map((f) => f.endpoint).join(', ')}) yet; ` +
          'drop them or run in one process',
      );
    const started = await startWorkerRun({
      scenario,
      scenarioSource,
      database,
      workers: options.workers,
      ...(options.runId ? { runId: options.runId } : {}),
      ...(options.emulatorUrl ? { emulatorUrl: options.emulatorUrl } : {}),
      ...(options.coordination ? { coordination: options.coordination } : {}),
    });
    emulatorClose = started.emulator ? () => started.emulator!.close() : undefined;
    const showLive = options.live !== false && !options.json;
    const note = (line: string) =>
      options.json ? process.stderr.write(`${line}\n`) : live ? live.log(line) : print(line);
    const shared = options.coordination
      ? `${coordinationBackendOf(options.coordination.url) === 'redis' ? 'Redis' : 'PostgreSQL'} at ${redactUrl(options.coordination.url)}`
      : 'the store';
    note(
      `run ${started.runId}: scenario ${scenario.name}, ${started.rounds} rounds, ${options.workers} workers on postgres, tokens and endpoint health shared on ${shared}`,
    );
    if (showLive) {
      // The parent shows the run as a one-process run does, from the log every worker appends to: each tick
      // reads only the events after the last one shown.
      tail = createRunEventTail(createRunStore(database), started.runId);
      live = createLiveView({
        source: tail,
        ...(options.liveOut ? { out: options.liveOut } : {}),
        title: `${scenario.name}  run ${started.runId}  ${options.workers} workers`,
      });
      const done = new Map<number, number>();
      let round = 1;
      const progress = () =>
        live?.setProgress({
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
    }
    // The coordination URL (its password too) reaches the workers through their environment, never their argv
    // (which any local user can read); without one, an inherited variable must not send them elsewhere.
    const env: NodeJS.ProcessEnv = { ...process.env };
    if (options.coordination) env[COORDINATION_URL_ENV] = options.coordination.url;
    else delete env[COORDINATION_URL_ENV];
    const exits = Array.from({ length: options.workers }, () => {
      const child = spawn(
        process.execPath,
        [BIN, 'worker', '--database-url', url, '--run-id', started.runId],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
          env,
        },
      );
      children.push(child);
      let stderr = '';
      // With the live view, the workers' own lines would say twice what the view shows from their events.
      child.stdout!.setEncoding('utf8').on('data', (s: string) => {
        if (!live) for (const line of s.split('\n')) if (line.trim()) note(line);
      });
      child.stderr!.setEncoding('utf8').on('data', (s: string) => {
        stderr += s;
      });
      return new Promise<{ code: number | null; stderr: string }>((resolve) =>
        child.on('exit', (code) => resolve({ code, stderr })),
      );
    });
    const onAbort = () => {
      for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
    };
    options.signal?.addEventListener('abort', onAbort, { once: true });
    const ended = await Promise.all(exits);
    options.signal?.removeEventListener('abort', onAbort);
    // The last events (the final commit's) are shown before the report.
    await tail?.poll().catch(() => {});
    tail?.close();
    live?.stop();
    live = undefined;
    const store = createRunStore(database);
    const run = await store.getRun(started.runId);
    if (run?.status !== 'completed') {
      const why =
        ended
          .find((e) => e.code !== 0)
          ?.stderr.trim()
          .split('\n')
          .pop() ?? '';
      throw new CliError(
        `run ${started.runId} ended ${run?.status ?? 'missing'} with its workers stopped${why ? ` (${scrubSecrets(why)})` : ''}; start \`breakwater worker --database-url … --run-id ${started.runId}\` to go on`,
        options.signal?.aborted ? { exitCode: 130 } : {},
      );
    }
    const stats = started.emulator?.stats();
    const report: RunReport = {
      ...(await loadRunReport(store, started.runId)),
      byWorker: await turnsByWorker(database, started.runId),
      ...(stats ? { emulator: { totalCalls: stats.totalCalls, maxInFlight: stats.maxInFlight } } : {}),
    };
    if (options.json) print(JSON.stringify(report));
    else for (const line of formatRunReport(report)) print(line);
    return report;
  } finally {
    tail?.close();
    live?.stop();
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await emulatorClose?.();
    await database.close();
  }
}
