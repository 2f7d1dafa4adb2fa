import { type Emulator, startEmulator } from './emulator-server.ts';
import { EMULATOR_FLAVORS } from './emulator-types.ts';

/**
 * Options of {@link runEmulatorCommand}.
 *
 * @example
 * ```ts
 * const opts: EmulatorCommandOptions = { port: 8700, profile: 'emulator.yaml' };
 * ```
 */
export interface EmulatorCommandOptions {
  /** Control port; flavors on port+1 … port+6. Default 0 (ephemeral ports). */
  port?: number;
  /** Path of a `.json`/`.yaml`/`.yml` profile. Default: the empty profile. */
  profile?: string;
  /** Address the listeners bind (see `EmulatorOptions.host`). @default '127.0.0.1' */
  host?: string;
  /** Names answered on a non-loopback bind (see `EmulatorOptions.allowedHosts`). @default [] */
  allowedHosts?: readonly string[];
  /** Stops the emulator when aborted (as SIGINT/SIGTERM do). */
  signal?: AbortSignal;
  /** Where lines go. Default: stdout. */
  print?: (line: string) => void;
  /** Called once the emulator listens (for callers that drive it while it runs). */
  onReady?: (emulator: Emulator) => void;
}

/**
 * `breakwater emulator`: starts the provider emulator, prints one base URL per line and runs until
 * SIGINT/SIGTERM or `signal` aborts. Resolves once every listener is closed.
 *
 * @example
 * ```ts
 * const ac = new AbortController();
 * const done = runEmulatorCommand({ port: 8700, profile: 'scenarios/storm.yaml', signal: ac.signal });
 * // … later
 * ac.abort();
 * await done;
 * ```
 */
export async function runEmulatorCommand(opts: EmulatorCommandOptions = {}): Promise<void> {
  const print = opts.print ?? ((line: string) => process.stdout.write(`${line}\n`));
  if (opts.signal?.aborted) return;
  const emu = await startEmulator({
    ...(opts.port !== undefined ? { port: opts.port } : {}),
    ...(opts.profile !== undefined ? { profile: opts.profile } : {}),
    ...(opts.host !== undefined ? { host: opts.host } : {}),
    ...(opts.allowedHosts !== undefined ? { allowedHosts: opts.allowedHosts } : {}),
  });
  const width = Math.max(...EMULATOR_FLAVORS.map((f) => f.length), 'control'.length);
  print(`${'control'.padEnd(width)}  ${emu.controlURL}`);
  for (const flavor of EMULATOR_FLAVORS) print(`${flavor.padEnd(width)}  ${emu.baseURL(flavor)}`);
  opts.onReady?.(emu);
  await new Promise<void>((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      opts.signal?.removeEventListener('abort', stop);
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
    opts.signal?.addEventListener('abort', stop, { once: true });
    if (opts.signal?.aborted) stop();
  });
  await emu.close();
}
