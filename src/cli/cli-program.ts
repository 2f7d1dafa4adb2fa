import { Command } from 'commander';
import { packageManifest } from '../config/package-root.ts';
import { isConfigError } from '../core/errors/config-error.ts';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import { isDataDirInUseError } from '../store/pglite-lock.ts';
import { isRunLeaseHeldError } from '../store/run-lease.ts';
import { isSnapshotRestoreError } from '../store/snapshot-restore-error.ts';
import { isMigrationError } from '../store/store-errors.ts';
import { isCliError } from './cli-error.ts';
import { oneLine } from './cli-output.ts';

/**
 * Adds one command to the program. Each command lives in `src/cli/commands/<name>-command.ts` and
 * exports one of these as `register<Name>Command`.
 *
 * @example
 * ```ts
 * export const registerHelloCommand: CommandRegistrar = (program) =>
 *   program.command('hello').description('say hello').action(() => console.log('hello'));
 * ```
 */
export type CommandRegistrar = (program: Command) => unknown;

/** Environment variable that turns on stack traces for failures (`BREAKWATER_DEBUG=1`). */
export const DEBUG_ENV = 'BREAKWATER_DEBUG';

function packageVersion(): string {
  try {
    return packageManifest().version;
  } catch {
    return '0.0.0';
  }
}

/** `breakwater emulator` for a subcommand, `breakwater` for the program. */
function fullName(command: Command): string {
  const names: string[] = [];
  for (let c: Command | null = command; c; c = c.parent) names.unshift(c.name());
  return names.join(' ');
}

/** Commander's own usage errors, rewritten as one line that names the command and where the usage is. */
function usageErrorWriter(command: Command) {
  const name = fullName(command);
  return (str: string, write: (s: string) => void) => {
    const text = oneLine(str.replace(/^error:\s*/i, '')).replace(/[.;]$/, '');
    write(`${name}: ${text}; run \`${name} --help\` for usage\n`);
  };
}

function configureTree(command: Command): void {
  command.configureOutput({ outputError: usageErrorWriter(command) });
  for (const sub of command.commands) configureTree(sub);
}

/**
 * Builds the `breakwater` program with the given commands. Every command gets `--help`, and
 * commander's usage errors (unknown option, bad argument) become one line naming the command.
 *
 * @example
 * ```ts
 * const program = createProgram([registerStartCommand, registerEmulatorCommand]);
 * program.commands.map((c) => c.name()); // ['start', 'emulator']
 * ```
 */
export function createProgram(registrars: readonly CommandRegistrar[]): Command {
  const program = new Command('breakwater')
    .description(
      'Keeps multi-agent LLM systems working through 429 storms, credit exhaustion, overload and dropped connections.',
    )
    .version(packageVersion(), '-V, --version', 'print the version')
    .helpOption('-h, --help', 'show help for this command')
    .showSuggestionAfterError(true);
  for (const register of registrars) register(program);
  configureTree(program);
  return program;
}

/** Failures whose message already says what to do: printed as they are. */
function isSelfExplaining(e: unknown): boolean {
  return (
    isConfigError(e) ||
    isCliError(e) ||
    isMigrationError(e) ||
    isDataDirInUseError(e) ||
    isRunLeaseHeldError(e) ||
    isSnapshotRestoreError(e)
  );
}

/**
 * The one line the CLI prints for a failed command: `<command>: <message>`, secrets scrubbed. An
 * unexpected error also says how to see its stack trace.
 *
 * @example
 * ```ts
 * describeFailure('breakwater emulator', new ConfigError({ source: 'p.yaml', path: 'seed', message: 'must be a number' }));
 * // 'breakwater emulator: p.yaml at seed: must be a number'
 * ```
 */
export function describeFailure(commandName: string, e: unknown): string {
  const message = e instanceof Error ? e.message : String(e);
  const text = oneLine(scrubSecrets(message || (e instanceof Error ? e.name : 'unknown error')));
  const hint = isSelfExplaining(e) ? '' : `; run again with ${DEBUG_ENV}=1 to see the stack trace`;
  return `${commandName}: ${text}${hint}`;
}

/** Options of {@link runCli}. */
export interface RunCliOptions {
  /** Where failure lines (and, in debug mode, stack traces) go. Default: stderr. */
  readonly writeErr?: (text: string) => void;
  /** Environment read for `BREAKWATER_DEBUG`. Default: `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
}

/**
 * Parses `argv` (as `process.argv`: node, script, args…) and runs the chosen command.
 *
 * @returns the exit code: 0 on success, the `CliError`'s own code, else 1. Usage errors and `--help`
 *   are handled by commander, which exits the process itself (1 and 0).
 * @example
 * ```ts
 * process.exitCode = await runCli(process.argv, [registerStartCommand]);
 * ```
 */
export async function runCli(
  argv: readonly string[],
  registrars: readonly CommandRegistrar[],
  options: RunCliOptions = {},
): Promise<number> {
  const writeErr = options.writeErr ?? ((text: string) => process.stderr.write(text));
  const env = options.env ?? process.env;
  const program = createProgram(registrars);
  let running: Command = program;
  program.hook('preAction', (_program, action) => {
    running = action;
  });
  try {
    await program.parseAsync([...argv]);
    return 0;
  } catch (e) {
    writeErr(`${describeFailure(fullName(running), e)}\n`);
    if (env[DEBUG_ENV] === '1' && e instanceof Error && e.stack) writeErr(`${scrubSecrets(e.stack)}\n`);
    return isCliError(e) ? e.exitCode : 1;
  }
}
