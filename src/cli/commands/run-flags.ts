import type { Command } from 'commander';
import type { ProviderMode, RunPolicy } from '../../runs/run-scenario.ts';
import { DEFAULT_DATA_DIR } from '../../store/open-database.ts';
import { CliError } from '../cli-error.ts';
import type { RunCommandOptions } from './run-command-options.ts';

export interface RunFlags {
  policy?: RunPolicy;
  providers?: ProviderMode;
  json?: boolean;
  databaseUrl?: string;
  dataDir?: string;
  runId?: string;
  emulatorUrl?: string;
  coordinationUrl?: string;
  coordinationPrefix?: string;
  viz?: boolean;
  port?: string;
  metricsPort?: string;
  live?: boolean;
  stdin?: boolean;
  stream?: boolean;
  workers?: string;
  virtualTime?: boolean;
}

export function workerCount(value: string): number {
  const n = Number(value);
  if (!/^\d{1,2}$/.test(value.trim()) || n < 1 || n > 64)
    throw new CliError(`--workers ${value} is not a worker count; give a whole number from 1 to 64`);
  return n;
}

function portNumber(flag: string, value: string): number {
  const port = Number(value);
  if (!/^\d{1,5}$/.test(value.trim()) || port > 65_535)
    throw new CliError(`${flag} ${value} is not a port; give 0–65535`);
  return port;
}

function vizPort(flags: RunFlags): number | undefined {
  if (!flags.viz) return undefined;
  return flags.port === undefined ? 0 : portNumber('--port', flags.port);
}

/** The options `run` and `resume` take alike. */
export function sharedOptions(flags: RunFlags): RunCommandOptions {
  const port = vizPort(flags);
  return {
    json: flags.json === true,
    ...(flags.databaseUrl ? { databaseUrl: flags.databaseUrl } : {}),
    ...(flags.dataDir ? { dataDir: flags.dataDir } : {}),
    ...(flags.emulatorUrl ? { emulatorUrl: flags.emulatorUrl } : {}),
    ...(flags.coordinationUrl ? { coordinationUrl: flags.coordinationUrl } : {}),
    ...(flags.coordinationPrefix !== undefined ? { coordinationPrefix: flags.coordinationPrefix } : {}),
    ...(port !== undefined ? { vizPort: port } : {}),
    ...(flags.metricsPort !== undefined
      ? { metricsPort: portNumber('--metrics-port', flags.metricsPort) }
      : {}),
    live: flags.live !== false,
    stdin: flags.stdin !== false,
    ...(flags.stream ? { stream: true } : {}),
  };
}

export const storeFlags = (cmd: Command) =>
  cmd
    .option('--json', 'print one JSON object (the report) at the end instead of the live view and the table')
    .option(
      '--database-url <url>',
      'PostgreSQL connection string (default: env DATABASE_URL, else embedded PGlite)',
    )
    .option(
      '--data-dir <dir>',
      `PGlite data directory (default: env BREAKWATER_DATA_DIR, else ${DEFAULT_DATA_DIR}/)`,
    )
    .option(
      '--emulator-url <url>',
      'use a running emulator (its control URL) instead of starting one in-process',
    )
    .option(
      '--coordination-url <url>',
      'share the concurrency tokens and endpoint health with other processes: postgres://… or redis://… (with --workers: where the workers share them; default their store)',
    )
    .option(
      '--coordination-prefix <prefix>',
      'Redis only: prefix of every key and channel (default breakwater:)',
    )
    .option('--viz', 'serve the live state visualizer on 127.0.0.1 while the run goes')
    .option('--port <n>', 'visualizer port with --viz (default: any free port)')
    .option(
      '--metrics-port <n>',
      'serve Prometheus metrics at /metrics on 127.0.0.1 while the run goes (0: any free port)',
    )
    .option('--no-live', 'no live view; just the report at the end')
    .option('--stream', "stream every turn: the live view shows each agent's text as it grows")
    .option('--no-stdin', 'do not read /byok PROVIDER KEY lines from stdin while the run goes');
