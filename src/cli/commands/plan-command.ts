import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { type Command, InvalidArgumentError } from 'commander';
import { formatPlan } from '../../planner/format-plan.ts';
import { planPage } from '../../planner/plan-page.ts';
import { planSchedule } from '../../planner/plan-schedule.ts';
import type { PlanResult } from '../../planner/plan-types.ts';
import { scenarioPlanInput } from '../../planner/scenario-plan-input.ts';
import { rewriteScenario } from '../../planner/scenario-rewrite.ts';
import { estimatesFromRun, type RunEstimates } from '../../planner/run-estimates.ts';
import { DEFAULT_SEARCH_BUDGET } from '../../planner/schedule-search.ts';
import { DEFAULT_DATA_DIR } from '../../store/open-database.ts';
import { isRunNotFoundError } from '../../store/store-errors.ts';
import { openStoreForCli } from './report-command.ts';
import { loadScenario, resolveScenario } from '../../scenarios/load-scenario.ts';
import { CliError } from '../cli-error.ts';
import { type Print, printToStdout } from '../cli-output.ts';

/** Options of {@link runPlanCommand}. */
export interface PlanCommandOptions {
  /** A scenario name under `scenarios/`, a folder, or a YAML/JSON file with a `schedule:`. Required. */
  readonly scenario: string;
  /** Print the plan as one JSON object. Default false. */
  readonly json?: boolean;
  /** Write the planned scenario (the moves applied to `schedule.jobs`) to this file. Default: not written. */
  readonly write?: string;
  /** Write the self-contained chart page to this file. Default: not written. */
  readonly html?: string;
  /** Schedules the exhaustive pass may evaluate. Default {@link DEFAULT_SEARCH_BUDGET}. */
  readonly searchBudget?: number;
  /** Estimate each agent's calls and tokens from this stored run instead of the declared sizes. Default: declared sizes. */
  readonly fromRun?: string;
  /** Where `fromRun` is stored: PostgreSQL. Default: env `DATABASE_URL`, else PGlite. */
  readonly databaseUrl?: string;
  /** Where `fromRun` is stored: a PGlite directory. Default: env `BREAKWATER_DATA_DIR`, else `.breakwater/`. */
  readonly dataDir?: string;
  readonly print?: Print;
}

function writeFile(path: string, text: string, flag: string): string {
  const file = resolve(path);
  try {
    writeFileSync(file, text);
  } catch (e) {
    throw new CliError(
      `${flag} ${path}: cannot write it (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); check the folder exists and is writable`,
    );
  }
  return file;
}

/** The stored run's estimates, or one line saying why they cannot be read. */
async function readEstimates(options: PlanCommandOptions, runId: string): Promise<RunEstimates> {
  const opened = await openStoreForCli({
    ...(options.databaseUrl !== undefined ? { databaseUrl: options.databaseUrl } : {}),
    ...(options.dataDir !== undefined ? { dataDir: options.dataDir } : {}),
  });
  if (opened.kind === 'absent')
    throw new CliError(
      `--from-run ${runId}: no store at ${opened.location}; give --data-dir or --database-url where the run was stored`,
    );
  try {
    return await estimatesFromRun(opened.store, runId);
  } catch (e) {
    if (isRunNotFoundError(e))
      throw new CliError(
        `--from-run ${runId}: no such run in ${opened.database.location}; \`breakwater runs\` lists them`,
      );
    throw e;
  } finally {
    await opened.database.close();
  }
}

/**
 * Plans a scenario's schedule: prints the peak, every limit it breaks and the proposal (or, with
 * `json`, the {@link PlanResult}); writes the planned scenario (`write`) and the chart page (`html`).
 * Resolves with the plan; exit code 2 (a `CliError`) when no fitting schedule was found.
 *
 * @example
 * ```ts
 * const plan = await runPlanCommand({ scenario: 'morning-peak-before-fixes', write: 'planned.yaml', html: 'plan.html' });
 * ```
 */
export async function runPlanCommand(options: PlanCommandOptions): Promise<PlanResult> {
  const print = options.print ?? printToStdout;
  const note = (line: string) => (options.json ? process.stderr.write(`${line}\n`) : print(line));
  const file = resolveScenario(options.scenario);
  const spec = loadScenario(file);
  if (options.write !== undefined && resolve(options.write) === file)
    throw new CliError(
      `--write ${options.write} is the scenario being planned; write the plan to another file`,
    );
  const estimates = options.fromRun !== undefined ? await readEstimates(options, options.fromRun) : undefined;
  if (estimates) {
    const measured = Object.entries(estimates.agents).map(
      ([a, e]) => `${a} ${Number(e.callsPerTurn.toFixed(2))} calls × ${e.tokensPerCall} tokens`,
    );
    note(
      `estimates from run ${estimates.runId}: ${measured.join(', ') || 'no agent measured (declared sizes kept)'}`,
    );
  }
  const plan = planSchedule(
    scenarioPlanInput(spec, { source: options.scenario, ...(estimates ? { estimates } : {}) }),
    {
      ...(options.searchBudget !== undefined ? { searchBudget: options.searchBudget } : {}),
    },
  );
  if (options.json) print(JSON.stringify(plan));
  else for (const line of formatPlan(plan, spec.name)) print(line);
  if (options.write !== undefined) {
    const text = rewriteScenario(readFileSync(file, 'utf8'), plan.proposal.moves, {
      source: options.scenario,
    });
    note(`planned scenario written to ${writeFile(options.write, text, '--write')}`);
  }
  if (options.html !== undefined)
    note(`chart page written to ${writeFile(options.html, planPage(plan, spec.name), '--html')}`);
  if (!plan.proposal.fits)
    throw new CliError(
      `no schedule found that fits the limits; ${plan.proposal.note ?? 'see the plan above'}`,
      {
        exitCode: 2,
      },
    );
  return plan;
}

function parseBudget(value: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 10_000_000)
    throw new InvalidArgumentError('give a whole number of schedules from 1 to 10,000,000');
  return n;
}

interface PlanFlags {
  json?: boolean;
  fromRun?: string;
  databaseUrl?: string;
  dataDir?: string;
  write?: string;
  html?: string;
  searchBudget?: number;
}

/**
 * Registers `breakwater plan <scenario> [--json] [--write FILE] [--html FILE] [--search-budget N]`.
 *
 * @example
 * ```ts
 * registerPlanCommand(new Command('breakwater'));
 * ```
 */
export function registerPlanCommand(program: Command): Command {
  return program
    .command('plan')
    .description(
      "See a cron schedule's peak against its quotas before it runs, and get the smallest set of moves that makes it fit.",
    )
    .argument(
      '<scenario>',
      'a scenario with schedule: (a name under scenarios/, a folder, or a YAML/JSON file)',
    )
    .option('--json', 'print one JSON object (the plan) instead of the text')
    .option('--write <file>', 'write the planned scenario (the moves applied to schedule.jobs) to this file')
    .option(
      '--html <file>',
      'write a self-contained page with the per-minute demand charts, before and after',
    )
    .option(
      '--search-budget <n>',
      `schedules the exhaustive search may try when the greedy pass is stuck (default ${DEFAULT_SEARCH_BUDGET.toLocaleString('en-US')})`,
      parseBudget,
    )
    .option(
      '--from-run <id>',
      "estimate each agent's calls and tokens from this stored run (default: the scenario's sizes)",
    )
    .option(
      '--database-url <url>',
      'with --from-run: PostgreSQL connection string (default: env DATABASE_URL)',
    )
    .option(
      '--data-dir <dir>',
      `with --from-run: PGlite data directory (default: env BREAKWATER_DATA_DIR, else ${DEFAULT_DATA_DIR}/)`,
    )
    .addHelpText(
      'after',
      '\nJobs move only as far as their flex allows (flex: 30m, +30m, -15m; no flex or flex: 0 pins a job);\n' +
        'operational jobs may move to the light chain, jobs with needsLlm: false may become noAgent.\n' +
        'Exit 0 when the schedule fits (as it is, or after the proposal); 2 when no fitting schedule was found.',
    )
    .action(async (scenario: string, flags: PlanFlags) => {
      await runPlanCommand({
        scenario,
        ...(flags.json ? { json: true } : {}),
        ...(flags.write !== undefined ? { write: flags.write } : {}),
        ...(flags.html !== undefined ? { html: flags.html } : {}),
        ...(flags.searchBudget !== undefined ? { searchBudget: flags.searchBudget } : {}),
        ...(flags.fromRun !== undefined ? { fromRun: flags.fromRun } : {}),
        ...(flags.databaseUrl !== undefined ? { databaseUrl: flags.databaseUrl } : {}),
        ...(flags.dataDir !== undefined ? { dataDir: flags.dataDir } : {}),
      });
    });
}
