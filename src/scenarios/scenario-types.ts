import type { EndpointFaultRule } from '../fault-proxy/endpoint-fault-rule.ts';
import type { EmulatorFlavor, EmulatorProfile } from '../emulator/emulator-types.ts';
import type { EndpointConfig } from '../engines/endpoint-config.ts';
import type { RuntimeConfigInput } from '../runtime/runtime-config.ts';

/**
 * A scenario: a declarative description of a multi-agent run — agents, work, engines, and (for emulated
 * runs) the emulator profile with its quotas, credit and faults on a timeline. Written as YAML or JSON
 * under `scenarios/<name>/scenario.yaml`; validated by `loadScenario` (a bad one is refused with one message
 * naming file, line and field).
 *
 * Two kinds of work, one runner: `rounds` (every agent answers every agenda item, round after round, seeing
 * the others' previous-round answers — seed 003) or `schedule` (cron jobs fire over a simulated window and
 * each firing is one turn; a round is one time slice — seed 000).
 */
export interface ScenarioSpec {
  readonly name: string;
  readonly description?: string;
  /** Simulated start, ISO 8601 with offset (e.g. `2026-08-17T06:00:00+09:00`). Default: the real now. */
  readonly start?: string;
  /** Simulated ms per real ms: 60 replays an hour in a minute. Default 1. */
  readonly timeScale?: number;
  /** The runtime config: endpoints (see {@link ScenarioEndpoint}), chains, tiers, concurrency, breaker, retry. */
  readonly runtime: Omit<RuntimeConfigInput, 'endpoints'> & {
    readonly endpoints: readonly ScenarioEndpoint[];
  };
  readonly agents: readonly ScenarioAgent[];
  readonly rounds?: RoundsSpec;
  readonly schedule?: ScheduleSpec;
  /**
   * The in-process emulator's profile (quotas, credit, faults on a timeline in emulated ms since the start,
   * latency, seed). Endpoints with `emulator:` point at it. Absent: no emulator is started.
   */
  readonly emulator?: EmulatorProfile;
  /** How the run's report judges it. Default: seed 000's checks over the whole run. */
  readonly report?: ReportSpec;
  /**
   * Fault rules aimed at endpoints by id, emulator-served or real: a local fault proxy in front of each
   * named endpoint's base URL acts them out and forwards every other call (kept with `--providers real`,
   * so a real endpoint's failure and recovery can be rehearsed). Windows count run-clock ms from the
   * start. Default: none.
   */
  readonly faults?: readonly EndpointFaultRule[];
}

/**
 * The report settings of a scenario: which window the checks look at, which tiers count as analysis agents,
 * and thresholds replacing seed 000's (`null` makes a check report-only — e.g. `sonnetPerHour` where sonnet's
 * quota is not the question).
 */
export interface ReportSpec {
  /** The checks' window: times of day (`07:00`, read in `timezone` on the run's first day) or ISO instants. */
  readonly peak?: { readonly from: string; readonly to: string };
  /** IANA zone for peak times of day and for printing. Default UTC. */
  readonly timezone?: string;
  /** Tiers counted as analysis agents. Default `['analysis']`. */
  readonly analysisTiers?: readonly string[];
  readonly thresholds?: Readonly<Record<string, number | null>>;
}

/**
 * An endpoint of a scenario. With `emulator: <flavor>` its `baseURL` is filled in from the in-process (or
 * external) emulator at run time and `apiKey` may name a key of the emulator profile; without it, it is a
 * real provider endpoint (`apiKeyEnv`, `baseURL` as usual).
 */
export type ScenarioEndpoint = EndpointConfig & { readonly emulator?: EmulatorFlavor };

/** One agent of a scenario. */
export interface ScenarioAgent {
  readonly name: string;
  /** System prompt. */
  readonly role?: string;
  /** One of `runtime.tiers`. Default: the lowest tier. */
  readonly tier?: string;
  /** Engine chain; required unless `noAgent`. */
  readonly chain?: string;
  /** Initial memory slots. */
  readonly memory?: Readonly<Record<string, string>>;
  /** Names of built-in scenario tools (see `src/scenarios/scenario-tools.ts`). */
  readonly tools?: readonly string[];
  /** Plain code, no LLM (seed 000's `no_agent=True`). */
  readonly noAgent?: boolean;
  readonly maxWaitMs?: number;
  readonly maxTokens?: number;
}

/** One agenda item. */
export interface AgendaItem {
  readonly id: string;
  readonly title: string;
  readonly detail?: string;
  /** e.g. `urgent` (seed 003's 10 urgent operational issues) or `composite` (its 25 composite items). */
  readonly kind?: string;
}

/** Round-based work: every agent answers every item, `count` times. */
export interface RoundsSpec {
  readonly count: number;
  readonly items: readonly AgendaItem[];
  /** Agents see the others' previous-round answers to the same item. Default true. */
  readonly seePreviousRound?: boolean;
  /** Agents that take part. Default: every LLM agent. */
  readonly agents?: readonly string[];
}

/** Scheduled work: cron jobs over a simulated window. */
export interface ScheduleSpec {
  /** Window start and end, ISO 8601 with offset. */
  readonly from: string;
  readonly to: string;
  /** IANA zone the cron expressions are read in (e.g. `Asia/Seoul`). */
  readonly timezone: string;
  /** Length of one round (one committed slice), simulated minutes. Default 10. */
  readonly sliceMinutes?: number;
  readonly jobs: readonly CronJob[];
}

/** One cron job. */
export interface CronJob {
  readonly name: string;
  /** Cron expression (5 or 6 fields), expanded with croner. */
  readonly cron: string;
  /** The agent that runs it (an LLM agent, or a `noAgent` one). */
  readonly agent: string;
  /** The work text. Default: the job name. */
  readonly prompt?: string;
  /**
   * How far `breakwater plan` may move the job's firings: `0` (pinned), `30m` (either way), `+30m` (only
   * later), `-15m` (only earlier), `1h`, or minutes. Default: pinned.
   */
  readonly flex?: string | number;
  /** `false`: the job can run as plain code, so `breakwater plan` may mark it `noAgent`. Default true. */
  readonly needsLlm?: boolean;
  /** Run this job as plain code (no LLM), whatever its agent is (seed 000's `no_agent=True`). Default false. */
  readonly noAgent?: boolean;
  /** Run this job's turns on this chain instead of its agent's (e.g. an operational job on `light`). Default: the agent's. */
  readonly chain?: string;
}

/** A planned turn: which agent answers which item, and (scheduled work) when. */
export interface PlannedTurn {
  readonly itemId: string;
  readonly agent: string;
  /** Simulated epoch ms at which a scheduled turn fires; absent for round work (runs as soon as it can). */
  readonly at?: number;
  /** The work text for scheduled jobs; round work builds its prompt from the item and the previous round. */
  readonly prompt?: string;
  readonly item?: AgendaItem;
}

/** One round of a run. */
export interface RoundPlan {
  readonly round: number;
  readonly turns: readonly PlannedTurn[];
}
