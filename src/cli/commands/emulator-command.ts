import { type Command, InvalidArgumentError, Option } from 'commander';
import { stringify } from 'yaml';
import type { Clock } from '../../clock/clock.ts';
import { loadEmulatorProfile, resolveProfile } from '../../emulator/emulator-profile.ts';
import { type Emulator, startEmulator } from '../../emulator/emulator-server.ts';
import { EMULATOR_FLAVORS, type EmulatorProfile, type EmulatorStats } from '../../emulator/emulator-types.ts';
import { maskSecret } from '../../redact/secret-scrubber.ts';
import { CliError } from '../cli-error.ts';
import { alignRows, type Print, printToStdout } from '../cli-output.ts';
import { listenForStop, whenAborted } from '../stop-signal.ts';

/** The highest control port: the six flavor listeners take port+1 … port+6. */
const MAX_CONTROL_PORT = 65_535 - EMULATOR_FLAVORS.length;

/** Options of {@link runEmulatorCommand}. */
export interface EmulatorCommandOptions {
  /** Control port; flavors listen on port+1 … port+6. 0 (default) = free ports chosen by the OS. */
  readonly port?: number;
  /** Path of a `.json`/`.yaml`/`.yml` emulator profile. Default: the empty profile. */
  readonly profile?: string;
  /**
   * Address the listeners bind; `0.0.0.0` for other containers to reach it.
   * @default '127.0.0.1'
   */
  readonly host?: string;
  /**
   * Host names answered besides the loopback names on a non-loopback bind (a compose service name).
   * @default []
   */
  readonly allowedHosts?: readonly string[];
  /** Stops the emulator when it aborts. Required: without it the emulator would never stop. */
  readonly signal: AbortSignal;
  /** Where the URLs and the closing summary go. Default: stdout. */
  readonly print?: Print;
  /** Time source of the emulator. Default: the system clock. */
  readonly clock?: Clock;
}

/** Parses `--allowed-hosts`: comma-separated host names, blanks dropped (each is checked by the emulator). */
export function parseAllowedHosts(value: string): string[] {
  return value
    .split(',')
    .map((h) => h.trim())
    .filter((h) => h !== '');
}

/** Parses `--port`: an integer from 0 to 65 529 (the flavors take the six ports above it). */
export function parsePort(value: string): number {
  const port = Number(value);
  if (!/^\d+$/.test(value) || !Number.isInteger(port) || port > MAX_CONTROL_PORT) {
    throw new InvalidArgumentError(
      `must be an integer from 0 (free ports) to ${MAX_CONTROL_PORT} (the six flavors take the ports above it)`,
    );
  }
  return port;
}

function profileLabel(file: string | undefined): string {
  return file ? `profile ${file}` : 'built-in empty profile: any key accepted, no quotas, no faults';
}

/**
 * The profile with every default filled in, keys masked, as YAML: what the emulator would run on.
 *
 * @example
 * ```ts
 * console.log(describeEffectiveProfile({ seed: 7 })); // "seed: 7\ntimeScale: 1\n…"
 * ```
 */
export function describeEffectiveProfile(profile: EmulatorProfile): string {
  const resolved = resolveProfile(profile);
  const shown = {
    ...resolved,
    keys: resolved.keys.map((k) => ({ ...k, key: maskSecret(k.key) })),
  };
  return stringify(shown).trimEnd();
}

function isAddressInUse(e: unknown): boolean {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'EADDRINUSE';
}

/**
 * Starts the provider emulator on 127.0.0.1 (or `host`), prints the control URL and each flavor's base URL,
 * and runs until `signal` aborts; then closes every listener.
 *
 * @returns the emulator's stats at the moment it stopped
 * @throws {ConfigError} for a bad profile file or host option; {@link CliError} when a port is taken
 * @example
 * ```ts
 * const stop = new AbortController();
 * const done = runEmulatorCommand({ port: 0, signal: stop.signal });
 * // … point SDKs at the printed base URLs …
 * stop.abort();
 * const stats = await done;
 * ```
 */
export async function runEmulatorCommand(options: EmulatorCommandOptions): Promise<EmulatorStats> {
  const print = options.print ?? printToStdout;
  const port = options.port ?? 0;
  const profile = loadEmulatorProfile(options.profile ?? {});
  let emulator: Emulator;
  try {
    emulator = await startEmulator({
      profile,
      port,
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.host !== undefined ? { host: options.host } : {}),
      ...(options.allowedHosts !== undefined ? { allowedHosts: options.allowedHosts } : {}),
    });
  } catch (e) {
    if (isAddressInUse(e)) {
      throw new CliError(
        `port ${port} or one of ${port + 1}–${port + EMULATOR_FLAVORS.length} is already in use; ` +
          'pick another --port, or --port 0 for free ports',
        { cause: e },
      );
    }
    throw e;
  }
  try {
    const names = options.allowedHosts?.length ? `; also answers ${options.allowedHosts.join(', ')}` : '';
    print(`breakwater emulator on ${options.host ?? '127.0.0.1'} (${profileLabel(options.profile)})${names}`);
    const rows: Array<[string, string]> = [['control', emulator.controlURL]];
    for (const flavor of EMULATOR_FLAVORS) rows.push([flavor, emulator.baseURL(flavor)]);
    for (const line of alignRows(rows)) print(line);
    print(`stats: curl ${emulator.controlURL}/_emulator/stats`);
    print('Ctrl+C (SIGINT) or SIGTERM stops it.');
    await whenAborted(options.signal);
    const stats = emulator.stats();
    const reason = options.signal.reason;
    print(
      `${typeof reason === 'string' ? `${reason}: ` : ''}closing the emulator after ${stats.totalCalls} call(s)`,
    );
    return stats;
  } finally {
    await emulator.close();
  }
}

/**
 * Registers `breakwater emulator [--port N] [--host ADDR] [--allowed-hosts NAMES] [--profile file] [--show-profile]`.
 *
 * @example
 * ```ts
 * registerEmulatorCommand(new Command('breakwater'));
 * ```
 */
export function registerEmulatorCommand(program: Command): Command {
  return program
    .command('emulator')
    .description(
      'Run the provider emulator (Anthropic, OpenAI, Gemini, Gemini-compat, vLLM and Ollama wire formats) on 127.0.0.1 (or --host) until SIGINT/SIGTERM.',
    )
    .addOption(
      new Option('--port <n>', 'control port; the six flavors listen on port+1 … port+6; 0 = free ports')
        .argParser(parsePort)
        .default(0),
    )
    .option('--host <address>', 'address to listen on; 0.0.0.0 lets other containers reach it', '127.0.0.1')
    .addOption(
      new Option(
        '--allowed-hosts <names>',
        'comma-separated Host names answered on a non-loopback --host (e.g. a compose service name); any other Host gets 403',
      ).argParser(parseAllowedHosts),
    )
    .option('--profile <file>', 'emulator profile (.json, .yaml or .yml): keys, quotas, credit, faults')
    .option('--show-profile', 'print the effective profile (every default filled in, keys masked) and exit')
    .addHelpText(
      'after',
      '\nControl endpoints on the control URL: GET /_emulator/stats, POST|GET|DELETE /_emulator/faults,\n' +
        'DELETE /_emulator/faults/<id>, POST /_emulator/credit, POST /_emulator/time-scale, POST /_emulator/reset.',
    )
    .action(
      async (opts: {
        port: number;
        host: string;
        allowedHosts?: string[];
        profile?: string;
        showProfile?: boolean;
      }) => {
        if (opts.showProfile) {
          printToStdout(describeEffectiveProfile(loadEmulatorProfile(opts.profile ?? {})));
          return;
        }
        const stop = listenForStop();
        try {
          await runEmulatorCommand({
            port: opts.port,
            host: opts.host,
            signal: stop.signal,
            ...(opts.allowedHosts !== undefined ? { allowedHosts: opts.allowedHosts } : {}),
            ...(opts.profile !== undefined ? { profile: opts.profile } : {}),
          });
        } finally {
          stop.dispose();
        }
      },
    );
}
