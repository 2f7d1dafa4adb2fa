import type { Logger } from 'pino';
import type { InspectionEvent } from 'xstate';
import type { Clock } from '../clock/clock.ts';
import type { CoordinationOptions } from '../coordination/coordination-options.ts';
import type { AgentInfo, RuntimeEventListener } from '../core/runtime-event.ts';
import type { Emulator } from '../emulator/emulator-server.ts';
import type { EmulatorStats } from '../emulator/emulator-types.ts';
import type { ScenarioSpec } from '../scenarios/scenario-types.ts';
import type { BreakwaterDatabase } from '../store/open-database.ts';
import type { RunLeaseOptions } from '../store/run-lease.ts';
import type { RunStore } from '../store/run-store.ts';
import type { RunRecord } from '../store/store-types.ts';
import type { RoundProgress } from './round-runner.ts';
import type { ProviderMode } from './run-timeline.ts';
import type { TurnExecutor } from './turn-executor.ts';

/** Which policy runs the turns. */
export type RunPolicy = 'breakwater' | 'status-quo';

/** Options of `runScenario`. */
export interface RunScenarioOptions {
  readonly scenario: ScenarioSpec;
  /** Where the scenario was loaded from; stored with the run so `resume` can load it again. */
  readonly scenarioSource?: string;
  /** Run id. Default: `<scenario>-<UTC timestamp>-<4 hex>`. */
  readonly runId?: string;
  /** Continue the run `runId` from its last committed round. Default false. */
  readonly resume?: boolean;
  /** Default `breakwater`. `status-quo` replays seed 000's worker as it was. */
  readonly policy?: RunPolicy;
  /** An open database (not closed by the run). Default: opened from `databaseUrl` / `dataDir` and closed at the end. */
  readonly database?: BreakwaterDatabase;
  readonly databaseUrl?: string;
  readonly dataDir?: string;
  /**
   * Control URL of an already running emulator to use instead of an in-process one (crash tests). It runs on its
   * own wall clock: on a time-scaled run its endpoints' waits are scaled like a real server's.
   */
  readonly emulatorUrl?: string;
  /**
   * `emulator` (default): `emulator:` endpoints talk to the provider emulator. `real`: the same scenario against
   * the real APIs, keys from the environment (see `toRealProviders`). A resumed run keeps the mode it started with.
   */
  readonly providers?: ProviderMode;
  /**
   * Run on a virtual clock (`createVirtualClock`): simulated time stands still while real work runs and
   * jumps to the next timer when only timers are left, so the scenario runs as fast as the machine
   * allows and its timeline does not depend on the machine's speed or load (tests, quick what-ifs).
   * `timeScale` is then ignored. Not with `providers: 'real'` (real providers live in wall time).
   * Default false.
   */
  readonly virtualTime?: boolean;
  /**
   * With `virtualTime`: the seed of the breakwater policy's backoff jitter (Math.random otherwise), so a run
   * replays identically and another seed shows how much a figure owes to the draw. Default: the scenario's
   * emulator seed.
   */
  readonly jitterSeed?: number;
  /** Environment read for real-provider keys and base URLs. Default `process.env`. */
  readonly env?: Readonly<Record<string, string | undefined>>;
  readonly logger?: Logger;
  readonly signal?: AbortSignal;
  /** Every runtime event of the run (live view, visualizer). */
  readonly onEvent?: RuntimeEventListener;
  readonly onProgress?: (progress: RoundProgress) => void;
  /** XState inspection events of the breakwater policy's actors. */
  readonly inspect?: (event: InspectionEvent) => void;
  /** The run lease's timing (tests shorten it). Default: 15 s, renewed every 5 s. */
  readonly lease?: RunLeaseOptions;
  /**
   * Share the concurrency tokens and endpoint health with other processes (another run, a service) through
   * PostgreSQL or Redis. Default: this process alone.
   */
  readonly coordination?: CoordinationOptions;
  /** Called once everything is set up, before the first turn (attach a live view or a visualizer here). */
  readonly onStart?: (context: ScenarioRunContext) => void | Promise<void>;
  /**
   * The breakwater policy streams every turn: committed turns are the same, and `onText` sees each agent's text
   * grow (the live view shows it). Default false.
   */
  readonly stream?: boolean;
  /** With `stream`: an agent's current text, after every change; `''` when its turn ended. Default none. */
  readonly onText?: (agent: string, text: string) => void;
}

/** What a starting run exposes to its observers. */
export interface ScenarioRunContext {
  readonly runId: string;
  readonly policy: RunPolicy;
  readonly executor: TurnExecutor;
  readonly store: RunStore;
  /** The run's clock: time-scaled (default) or virtual (`virtualTime`). */
  readonly clock: Clock;
  readonly agents: readonly AgentInfo[];
  readonly rounds: number;
  readonly emulator?: Emulator;
}

/** The outcome of `runScenario`. */
export interface ScenarioRunResult {
  readonly runId: string;
  readonly run: RunRecord;
  /** The in-process emulator's stats at the end (absent for real providers or an external emulator). */
  readonly emulatorStats?: EmulatorStats;
  /** How long the run took in real time, ms. */
  readonly realMs: number;
  /**
   * On a virtual clock (`virtualTime`): how many times it jumped past real work it could not see finish (its
   * 30 s safety valve). 0 means the timeline did not depend on the machine's speed.
   */
  readonly forcedClockJumps?: number;
}
