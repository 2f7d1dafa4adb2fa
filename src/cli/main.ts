#!/usr/bin/env node
import { type CommandRegistrar, runCli } from './cli-program.ts';

/*
 * The `breakwater` command (bin/breakwater.js runs this file bundled by esbuild, or through tsx). Each command lives in
 * src/cli/commands/<name>-command.ts; to add one, list its module and register function here.
 */

/** A command's module, loaded only when needed: `breakwater runs` need not load three provider SDKs. */
interface CommandModule {
  readonly names: readonly string[];
  readonly load: () => Promise<CommandRegistrar>;
}

/** Every command of the CLI, in the order `--help` lists them. */
export const COMMAND_MODULES: readonly CommandModule[] = Object.freeze([
  {
    names: ['run', 'resume'],
    load: async () => (await import('./commands/run-command.ts')).registerRunCommand,
  },
  { names: ['demo'], load: async () => (await import('./commands/start-command.ts')).registerStartCommand },
  {
    names: ['emulator'],
    load: async () => (await import('./commands/emulator-command.ts')).registerEmulatorCommand,
  },
  {
    names: ['migrate'],
    load: async () => (await import('./commands/migrate-command.ts')).registerMigrateCommand,
  },
  { names: ['viz'], load: async () => (await import('./commands/viz-command.ts')).registerVizCommand },
  {
    names: ['report'],
    load: async () => (await import('./commands/report-command.ts')).registerReportCommand,
  },
  { names: ['runs'], load: async () => (await import('./commands/runs-command.ts')).registerRunsCommand },
  { names: ['plan'], load: async () => (await import('./commands/plan-command.ts')).registerPlanCommand },
  {
    names: ['worker'],
    load: async () => (await import('./commands/worker-command.ts')).registerWorkerCommand,
  },
]);

/** The registrars `argv` needs: the named command's alone, or all of them (help, a typo, no command). */
export async function commandsFor(argv: readonly string[]): Promise<CommandRegistrar[]> {
  const first = argv[2];
  const named = COMMAND_MODULES.find((m) => first !== undefined && m.names.includes(first));
  return Promise.all((named ? [named] : COMMAND_MODULES).map((m) => m.load()));
}

process.exitCode = await runCli(process.argv, await commandsFor(process.argv));
