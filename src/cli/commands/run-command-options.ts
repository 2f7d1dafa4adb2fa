import type { ByokConsoleInput } from '../../byok/byok-console.ts';
import type { ProviderMode, RunPolicy } from '../../runs/run-scenario.ts';
import type { Print } from '../cli-output.ts';

/** The scenario `breakwater run` replays when none is named (seed 003). */
export const DEFAULT_SCENARIO = 'agent8-storm';

/** Options of `runRunCommand`. */
export interface RunCommandOptions {
  /** A scenario name under `scenarios/`, a folder, or a YAML/JSON file. Default {@link DEFAULT_SCENARIO}. */
  readonly scenario?: string;
  /** Resume this run instead of starting one. */
  readonly resumeRunId?: string;
  readonly runId?: string;
  /** Default `breakwater`. */
  readonly policy?: RunPolicy;
  /** `emulator` (default) or `real` (keys from ANTHROPIC_API_KEY / OPENAI_API_KEY / GEMINI_API_KEY). */
  readonly providers?: ProviderMode;
  readonly json?: boolean;
  readonly databaseUrl?: string;
  readonly dataDir?: string;
  /** Control URL of a running emulator to use instead of an in-process one. */
  readonly emulatorUrl?: string;
  /** Share tokens and endpoint health with other processes: `postgres://…` or `redis://…`. Default: none. */
  readonly coordinationUrl?: string;
  /** Redis only: prefix of every key and channel of `coordinationUrl`. Default `breakwater:`. */
  readonly coordinationPrefix?: string;
  /** Serve the live state visualizer on 127.0.0.1 (0 = any free port). Default: off. */
  readonly vizPort?: number;
  /** Serve Prometheus metrics at `/metrics` on 127.0.0.1 (0 = any free port). Default: off. */
  readonly metricsPort?: number;
  /** Show the live view. Default true. */
  readonly live?: boolean;
  /** Stream every turn: the live view shows each agent's text as it grows; committed turns are the same. Default false. */
  readonly stream?: boolean;
  /** With `stream`: each agent's text of its running turn after every change (`''` when it ends). Default none. */
  readonly onText?: (agent: string, text: string) => void;
  /**
   * Read `/byok PROVIDER KEY` lines from stdin while the run goes (only when stdin is a terminal or a
   * pipe; never blocks the run). Default true; `--no-stdin` turns it off.
   */
  readonly stdin?: boolean;
  /** Where `/byok` lines come from instead of stdin (tests). Default: file descriptor 0, read as bytes. */
  readonly input?: ByokConsoleInput;
  readonly print?: Print;
  readonly signal?: AbortSignal;
  /**
   * Spread the run over this many local worker processes (`breakwater worker`) on one PostgreSQL store and one
   * coordination pool. Default: this process alone; a resumed run started with workers goes on with as many.
   */
  readonly workers?: number;
  /**
   * Run on a virtual clock instead of the scenario's scaled one: as fast as the CPU allows, the same timeline on a
   * fast, slow or loaded machine (`timeScale` ignored). Only for a new run whose endpoints are all the in-process
   * emulator's (`checkVirtualTimeFlags`). Default false.
   */
  readonly virtualTime?: boolean;
}
