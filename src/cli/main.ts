import { type CommandRegistrar, runCli } from './cli-program.ts';
import { registerEmulatorCommand } from './commands/emulator-command.ts';
import { registerMigrateCommand } from './commands/migrate-command.ts';
import { registerReportCommand } from './commands/report-command.ts';
import { registerRunCommand } from './commands/run-command.ts';
import { registerRunsCommand } from './commands/runs-command.ts';
import { registerStartCommand } from './commands/start-command.ts';
import { registerVizCommand } from './commands/viz-command.ts';

/*
 * The `breakwater` command (bin/breakwater.js runs this file through tsx). Each command lives in
 * src/cli/commands/<name>-command.ts; to add one, import its register function and list it here.
 */

/** Every command of the CLI, in the order `--help` lists them. */
export const COMMANDS: readonly CommandRegistrar[] = Object.freeze([
  registerRunCommand,
  registerStartCommand,
  registerEmulatorCommand,
  registerMigrateCommand,
  registerVizCommand,
  registerReportCommand,
  registerRunsCommand,
]);

process.exitCode = await runCli(process.argv, COMMANDS);
