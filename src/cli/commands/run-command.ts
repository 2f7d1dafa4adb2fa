import { Option, type Command } from 'commander';
import { createLogger } from '../../logging/logger.ts';
import { startOtlpTracing } from '../../observability/otlp-export.ts';
import { scrubSecrets } from '../../redact/secret-scrubber.ts';
import { formatRunReport } from '../../report/format-report.ts';
import { loadRunReport } from '../../report/load-run-report.ts';
import type { RunReport } from '../../report/report-types.ts';
import { type RunPolicy, runScenario } from '../../runs/run-scenario.ts';
import { loadScenario, resolveScenario } from '../../scenarios/load-scenario.ts';
import type { ScenarioSpec } from '../../scenarios/scenario-types.ts';
import { findDatabaseUnavailable } from '../../store/database-unavailable-error.ts';
import type { BreakwaterDatabase } from '../../store/open-database.ts';
import { createRunStore, type RunStore } from '../../store/run-store.ts';
import { CliError } from '../cli-error.ts';
import { printToStdout } from '../cli-output.ts';
import { openCliDatabase } from '../cli-store.ts';
import { listenForStop, STOP_GRACE_MS } from '../stop-signal.ts';
import { flushOtlp } from './otlp-flush.ts';
import { DEFAULT_SCENARIO, type RunCommandOptions } from './run-command-options.ts';
import { checkCoordination, checkEmulatorUrl, checkRunId, listenForMetrics } from './run-flag-checks.ts';
import { type RunFlags, sharedOptions, storeFlags, workerCount } from './run-flags.ts';
import { closeRunWatch, newRunWatch, type RunWatch, watchCallbacks } from './run-watch.ts';
import { isWorkersResume, runWorkersCommand } from './run-workers-command.ts';
import { checkVirtualTimeFlags, checkVirtualTimeScenario } from './virtual-time-check.ts';
import { vizReportEvent } from './viz-report-event.ts';

export { DEFAULT_SCENARIO, type RunCommandOptions } from './run-command-options.ts';

/**
 * Runs (or resumes) a scenario with the live view, commits every round, then prints the report (or its JSON).
 * Resolves with the report; a run that did not complete rejects with a CliError saying how to resume it.
 *
 * @example
 * ```ts
 * const report = await runRunCommand({ scenario: 'agent8-storm', dataDir: '.breakwater', json: true });
 * ```
 */
export async function runRunCommand(options: RunCommandOptions = {}): Promise<RunReport> {
  const print = options.print ?? printToStdout;
  if (options.resumeRunId !== undefined && options.resumeRunId.trim() === '')
    throw new CliError('resume needs the id of a run; `breakwater runs` lists them');
  if (options.virtualTime && options.workers !== undefined)
    throw new CliError(
      '--virtual-time does not go with --workers (worker processes share wall-time leases): a virtual clock is only for the in-process emulator; drop one',
    );
  if (options.workers !== undefined || (await isWorkersResume(options)))
    return runWorkersCommand(options, print);
  if (options.virtualTime) checkVirtualTimeFlags(options);
  if (options.emulatorUrl !== undefined) checkEmulatorUrl(options.emulatorUrl);
  // Checked and reached before anything is stored: a bad or unreachable backend is one line, and no run.
  const coordination =
    options.coordinationUrl !== undefined
      ? await checkCoordination(options.coordinationUrl, options.coordinationPrefix)
      : undefined;
  // Lines meant for the user while --json keeps stdout for the report alone.
  const note = (line: string) => {
    if (options.json) process.stderr.write(`${scrubSecrets(line)}\n`);
    else print(line);
  };
  // A new run's scenario is read and checked before the store opens: a scenario refused for its form or its bounds
  // costs no PGlite start (seconds of CPU) and leaves no data folder behind. A resumed run's is in the store.
  const freshSource =
    options.resumeRunId === undefined ? resolveScenario(options.scenario ?? DEFAULT_SCENARIO) : undefined;
  const freshScenario = freshSource !== undefined ? loadScenario(freshSource) : undefined;
  if (options.virtualTime) {
    if (!freshScenario)
      throw new CliError('--virtual-time is for a new run; resume continues on its own clock');
    checkVirtualTimeScenario(freshScenario);
  }
  const database: BreakwaterDatabase = await openCliDatabase({
    ...(options.databaseUrl ? { databaseUrl: options.databaseUrl } : {}),
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
  });
  const store = createRunStore(database);
  const watch = newRunWatch();
  try {
    const { scenarioSource, scenario, policy } =
      freshSource !== undefined && freshScenario !== undefined
        ? { scenarioSource: freshSource, scenario: freshScenario, policy: options.policy }
        : await resumedScenario(store, database, options);
    // Bound before the run exists: a port in use stops the command before anything is stored.
    if (options.metricsPort !== undefined)
      watch.metrics = await listenForMetrics(watch.metricsRegistry, options.metricsPort);
    const result = await runScenario({
      scenario,
      scenarioSource,
      database,
      ...(options.resumeRunId !== undefined
        ? { runId: options.resumeRunId, resume: true }
        : options.runId
          ? { runId: options.runId }
          : {}),
      ...(policy ? { policy } : {}),
      ...(options.providers ? { providers: options.providers } : {}),
      ...(options.emulatorUrl ? { emulatorUrl: options.emulatorUrl } : {}),
      ...(options.virtualTime ? { virtualTime: true } : {}),
      ...(coordination ? { coordination } : {}),
      ...(options.signal ? { signal: options.signal } : {}),
      logger: createLogger(),
      ...watchCallbacks(watch, { options, print, note, database, store, scenario }),
    }).catch((e: unknown) => {
      throw runStopped(e, options.signal, watch);
    });
    watch.live?.stop();
    watch.live = undefined;
    // The virtual clock's safety valve fired: its timeline then depended on the machine after all; say so.
    if (result.forcedClockJumps)
      note(
        `virtual clock: ${result.forcedClockJumps} forced jump(s) past work it could not see finish; this run's timeline depended on the machine`,
      );
    const report = await loadRunReport(store, result.runId);
    // The page shows the run's end with the report's verdicts before the server goes.
    watch.vizSource?.publish(vizReportEvent(watch.runClock?.now() ?? Date.now(), result.run.status, report));
    if (options.json) print(JSON.stringify(report));
    else for (const line of formatRunReport(report)) print(line);
    if (result.run.status !== 'completed') {
      throw new CliError(
        `run ${result.runId} ended ${result.run.status}; continue it with \`breakwater resume ${result.runId}\``,
      );
    }
    return report;
  } finally {
    await closeRunWatch(watch);
    await database.close();
  }
}

/** A resumed run's scenario, read again from where it was loaded, and its policy unless one is given. */
async function resumedScenario(
  store: RunStore,
  database: BreakwaterDatabase,
  options: RunCommandOptions,
): Promise<{ scenarioSource: string; scenario: ScenarioSpec; policy: RunPolicy | undefined }> {
  const resumeRunId = options.resumeRunId ?? '';
  const run = await store.getRun(resumeRunId);
  if (!run)
    throw new CliError(`no run "${resumeRunId}" in ${database.location}; list runs with \`breakwater runs\``);
  const config = run.config as { scenarioSource?: string; policy?: RunPolicy } | null;
  if (!config?.scenarioSource)
    throw new CliError(`run "${run.runId}" does not say which scenario it ran; it cannot be resumed`);
  const scenarioSource = config.scenarioSource;
  return { scenarioSource, scenario: loadScenario(scenarioSource), policy: options.policy ?? config.policy };
}

/** What a run that threw is reported as: a lost database or an interruption in one line, else the error itself. */
function runStopped(e: unknown, signal: AbortSignal | undefined, watch: RunWatch): unknown {
  const lost = findDatabaseUnavailable(e);
  if (lost) return databaseLost(lost, watch.started, watch.committed);
  if (signal?.aborted) {
    return new CliError(
      `run interrupted; continue it with \`breakwater resume <run-id>\` (\`breakwater runs\` lists them)`,
      { exitCode: 130 },
    );
  }
  return e;
}

/** One line for a run whose database went away: what happened, where the run stands, how to go on. */
function databaseLost(
  lost: { location: string; problem: string },
  started: { runId: string; rounds: number } | undefined,
  committed: number,
): CliError {
  const what = `the database stopped answering (${lost.location}: ${lost.problem})`;
  if (!started) return new CliError(`${what}; no run was started`, { exitCode: 3 });
  const kept =
    committed > 1
      ? `rounds 1–${committed} of ${started.rounds} are committed`
      : committed === 1
        ? `round 1 of ${started.rounds} is committed`
        : 'no round is committed yet';
  return new CliError(
    `${what}; run ${started.runId} stopped: ${kept}, round ${committed + 1} was not committed; continue it with \`breakwater resume ${started.runId}\` once the database answers again`,
    { exitCode: 3 },
  );
}

async function act(options: RunCommandOptions): Promise<void> {
  const otlp = await startOtlpTracing(process.env).catch((e: unknown) => {
    throw new CliError(e instanceof Error ? e.message : String(e));
  });
  const stop = listenForStop({ forceExitAfterMs: STOP_GRACE_MS });
  try {
    await runRunCommand({ ...options, signal: stop.signal });
  } finally {
    stop.dispose();
    if (otlp) await flushOtlp(otlp);
  }
}

/**
 * Registers `breakwater run [scenario]` and `breakwater resume <run-id>`.
 *
 * @example
 * ```ts
 * registerRunCommand(new Command('breakwater'));
 * ```
 */
export function registerRunCommand(program: Command): Command {
  storeFlags(
    program
      .command('run')
      .description('Run a scenario (default: agent8-storm, the seed-003 incident) and print its report.')
      .argument(
        '[scenario]',
        'a scenario name under scenarios/, a folder, or a YAML/JSON file',
        DEFAULT_SCENARIO,
      )
      .addOption(
        new Option('--policy <policy>', 'who runs the turns')
          .choices(['breakwater', 'status-quo'])
          .default('breakwater'),
      )
      .addOption(
        new Option(
          '--providers <where>',
          'emulator: the built-in provider emulator; real: the real APIs, keys from ANTHROPIC_API_KEY / OPENAI_API_KEY / GEMINI_API_KEY',
        )
          .choices(['emulator', 'real'])
          .default('emulator'),
      )
      .option('--run-id <id>', 'id of the new run (default: <scenario>-<timestamp>-<hex>)')
      .option(
        '--workers <n>',
        'spread the run over N local worker processes on one PostgreSQL store (needs --database-url)',
      )
      .option(
        '--virtual-time',
        'run on a virtual clock (timeScale ignored): as fast as the CPU allows, the same timeline on any machine; in-process emulator endpoints only',
      ),
  ).action(async (scenario: string, flags: RunFlags) => {
    await act({
      scenario,
      ...(flags.workers !== undefined ? { workers: workerCount(flags.workers) } : {}),
      ...(flags.virtualTime ? { virtualTime: true } : {}),
      ...(flags.policy ? { policy: flags.policy } : {}),
      ...(flags.providers ? { providers: flags.providers } : {}),
      ...(flags.runId !== undefined ? { runId: checkRunId(flags.runId) } : {}),
      ...sharedOptions(flags),
    });
  });
  return storeFlags(
    program
      .command('resume')
      .description(
        'Continue an interrupted run from its last committed round, with every agent’s memory, and print its report.',
      )
      .argument('<run-id>', 'the run (`breakwater runs` lists them)')
      .option(
        '--workers <n>',
        'a run started with --workers: how many worker processes go on with it (default: as many as it started with)',
      ),
  ).action(async (runId: string, flags: RunFlags) => {
    await act({
      resumeRunId: runId,
      ...(flags.workers !== undefined ? { workers: workerCount(flags.workers) } : {}),
      ...sharedOptions(flags),
    });
  });
}
