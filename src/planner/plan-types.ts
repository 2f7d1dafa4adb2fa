/**
 * Plain-data shapes of `breakwater plan`: what {@link planSchedule} takes (the plain form, for crons kept
 * outside a scenario) and what it returns. Times are epoch ms; minutes are whole clock minutes.
 */

/**
 * An endpoint the schedule's calls land on, with its declared limits.
 *
 * @example
 * ```ts
 * const sonnet: PlanEndpoint = { id: 'anthropic-sonnet', model: 'claude-sonnet-4-6', rpm: 4, tpm: 8000 };
 * ```
 */
export interface PlanEndpoint {
  readonly id: string;
  /** Model name; hourly budgets match it. Default: the id. */
  readonly model?: string;
  /** Requests per minute. Default: unlimited. */
  readonly rpm?: number;
  /** Tokens per minute (input + output). Default: unlimited. */
  readonly tpm?: number;
}

/**
 * A per-model hourly budget (seed 000's "sonnet ≤ 20 calls per hour"): calls to endpoints whose model
 * (or id) contains `match`, case-insensitive, in any 60 minutes of the window. By default every call of a
 * chain that can reach such an endpoint counts (`worstCase`): when the endpoints before it are cooling
 * down, the chain's whole load lands there — seed 000's sonnet took 40+ calls an hour when the codex cap
 * hit.
 *
 * @example
 * ```ts
 * const budget: HourlyBudget = { name: 'sonnet calls per hour', match: 'sonnet', limit: 20 };
 * ```
 */
export interface HourlyBudget {
  readonly name: string;
  readonly match: string;
  readonly limit: number;
  /**
   * Count every call of a chain that includes a matching endpoint (true), or only the calls the demand
   * model places on it when the endpoints before it have room (false). Default true.
   */
  readonly worstCase?: boolean;
}

/**
 * One cron job of the plain form, with its estimates.
 *
 * @example
 * ```ts
 * const job: PlanJob = { name: 'fx-briefing', cron: '5 7 * * 1-5', chain: 'premium', flex: '30m' };
 * ```
 */
export interface PlanJob {
  readonly name: string;
  /** 5 fields (or 6, seconds first), read in the plan's time zone by croner. */
  readonly cron: string;
  /** The chain its LLM calls go to, in order. Absent (or `noAgent`): plain code, no LLM call. */
  readonly chain?: string;
  /** LLM calls per firing. Default 1. */
  readonly calls?: number;
  /** Tokens per call (input + output reservation). Default 1 000. */
  readonly tokensPerCall?: number;
  /** How far the planner may move it: `0` (pinned), `30m`, `+30m`, `-15m`, `1h`, or minutes. Default pinned. */
  readonly flex?: string | number;
  /** An operational job: may move to the light chain. Default false. */
  readonly operational?: boolean;
  /** False for a job that can run as plain code: the planner may mark it `noAgent`. Default true. */
  readonly needsLlm?: boolean;
  /** Runs as plain code already. Default false. */
  readonly noAgent?: boolean;
  /** Served first within a minute when lower (the tier's rank: analysis before ops). Default 0. */
  readonly priority?: number;
}

/**
 * The plain input of {@link planSchedule}: a window, the endpoints and chains with their limits, the
 * jobs with their estimates.
 *
 * @example
 * ```ts
 * const input: PlanInput = {
 *   from: '2026-08-17T06:00:00+09:00', to: '2026-08-17T09:00:00+09:00', timezone: 'Asia/Seoul',
 *   endpoints: [{ id: 'sonnet', model: 'claude-sonnet-4-6', rpm: 4 }],
 *   chains: { premium: ['sonnet'] },
 *   budgets: [{ name: 'sonnet calls per hour', match: 'sonnet', limit: 20 }],
 *   jobs: [{ name: 'flusher', cron: '*\/2 * * * *', chain: 'premium', needsLlm: false }],
 * };
 * ```
 */
export interface PlanInput {
  /** Window start: ISO 8601 with offset, or epoch ms. */
  readonly from: string | number;
  /** Window end (exclusive): ISO 8601 with offset, or epoch ms. */
  readonly to: string | number;
  /** IANA zone the crons are read in. */
  readonly timezone: string;
  readonly endpoints: readonly PlanEndpoint[];
  /** Chain name → endpoint ids, first choice first. */
  readonly chains: Readonly<Record<string, readonly string[]>>;
  readonly jobs: readonly PlanJob[];
  /** Global concurrency tokens (calls in flight at once). Default: unlimited. */
  readonly concurrency?: number;
  /** Mean length of one call, seconds (occupancy of the concurrency tokens). Default 6. */
  readonly callSeconds?: number;
  /** Per-model hourly budgets. Default none. */
  readonly budgets?: readonly HourlyBudget[];
  /** The chain operational jobs may move to. Default `light` when `chains` has it, else none. */
  readonly lightChain?: string;
  /** Names the input in errors (a file path). Default `plan input`. */
  readonly source?: string;
}

/**
 * Options of {@link planSchedule}.
 *
 * @example
 * ```ts
 * planSchedule(input, { searchBudget: 10_000 });
 * ```
 */
export interface PlanOptions {
  /**
   * Most schedules evaluated by the exhaustive search that runs when the greedy pass does not find a
   * fitting schedule. Default 50 000.
   */
  readonly searchBudget?: number;
  /** Skip the proposal (analysis only). Default false. */
  readonly analyseOnly?: boolean;
}

/** What a limit counts. */
export type BreachKind = 'rpm' | 'tpm' | 'concurrency' | 'budget';

/**
 * One limit broken: the worst minute (or hour, for a budget) and how many minutes (or hour windows)
 * were over.
 *
 * @example
 * ```ts
 * `${b.target}: ${b.demand} > ${b.limit} ${b.kind}`;
 * ```
 */
export interface Breach {
  readonly kind: BreachKind;
  /** Endpoint id, budget name, or `concurrency`. */
  readonly target: string;
  readonly limit: number;
  /** The worst demand. */
  readonly demand: number;
  /** demand − limit at the worst point. */
  readonly over: number;
  /** Start of the worst minute (or 60-minute span). */
  readonly at: number;
  /** Minutes (budgets: 60-minute spans, one per start minute) over the limit. */
  readonly count: number;
}

/** Per-minute demand on one endpoint. */
export interface EndpointDemand {
  readonly id: string;
  readonly model: string;
  readonly rpm: number | null;
  readonly tpm: number | null;
  /** Calls per minute of the window. */
  readonly calls: readonly number[];
  readonly tokens: readonly number[];
}

/** One budget's calls, per minute and at its busiest hour. */
export interface BudgetDemand {
  readonly name: string;
  readonly match: string;
  readonly limit: number;
  readonly perMinute: readonly number[];
  /** The most calls in any 60 minutes of the window. */
  readonly peakHour: number;
  readonly peakHourFrom: number;
}

/** One clock hour of the window (in the plan's zone). */
export interface HourDemand {
  readonly from: number;
  /** `07:00` in the plan's zone. */
  readonly label: string;
  /** LLM calls started in it. */
  readonly calls: number;
  readonly byEndpoint: Readonly<Record<string, number>>;
  readonly byBudget: Readonly<Record<string, number>>;
  /** Excess over every per-minute limit in it, in calls (tokens counted as calls at the mean size). */
  readonly excess: number;
}

/** The jobs behind a peak, most calls first. */
export interface PeakJob {
  readonly name: string;
  readonly calls: number;
  readonly chain: string | null;
}

/** The hour a plan points at: the clock hour with the most excess (else the most calls). */
export interface PlanPeak {
  readonly from: number;
  readonly to: number;
  readonly label: string;
  readonly calls: number;
  readonly jobs: readonly PeakJob[];
  /** Budgets whose count in this clock hour is over their limit. */
  readonly budgets: readonly { readonly name: string; readonly calls: number; readonly limit: number }[];
}

/**
 * The demand of one schedule against every limit.
 *
 * @example
 * ```ts
 * if (!demand.fits) for (const b of demand.breaches) console.log(b.target, b.over);
 * ```
 */
export interface DemandSummary {
  readonly fits: boolean;
  /** Start of every minute of the window. */
  readonly minutes: readonly number[];
  readonly endpoints: readonly EndpointDemand[];
  readonly concurrency: { readonly limit: number | null; readonly occupancy: readonly number[] };
  readonly budgets: readonly BudgetDemand[];
  readonly hours: readonly HourDemand[];
  readonly breaches: readonly Breach[];
  readonly peak: PlanPeak | null;
  /** LLM calls in the window. */
  readonly calls: number;
  /** Calls that could not go to their chain's first endpoint in their minute (predicted fallbacks). */
  readonly spilled: number;
}

/** What a move changes. */
export type MoveKind = 'shift' | 'chain' | 'noAgent';

/**
 * One change to one job.
 *
 * @example
 * ```ts
 * const m: PlanMove = { job: 'kpi-daily', kind: 'shift', minutes: 10, from: '45 7 * * *', to: '55 7 * * *' };
 * ```
 */
export interface PlanMove {
  readonly job: string;
  readonly kind: MoveKind;
  /** For a shift: minutes later (negative: earlier). */
  readonly minutes?: number;
  /** Before and after: the cron (shift), the chain (chain), `false`/`true` (noAgent). */
  readonly from: string;
  readonly to: string;
}

/** The proposal: the moves, and whether the schedule fits after them. */
export interface PlanProposal {
  readonly fits: boolean;
  readonly moves: readonly PlanMove[];
  /** Schedules evaluated. */
  readonly evaluated: number;
  /** Why no fitting schedule was found, when none was. */
  readonly note?: string;
}

/** A job as the plan read it. */
export interface PlannedJob {
  readonly name: string;
  readonly cron: string;
  readonly chain: string | null;
  readonly flex: string;
  /** Firings inside the window. */
  readonly firings: number;
  readonly callsPerFiring: number;
  readonly tokensPerCall: number;
}

/**
 * The result of {@link planSchedule}.
 *
 * @example
 * ```ts
 * const plan = planSchedule(loadScenario('morning-peak-before-fixes'));
 * plan.before.peak?.label; // '07:00'
 * plan.proposal.moves.length;
 * ```
 */
export interface PlanResult {
  readonly window: { readonly from: number; readonly to: number; readonly timezone: string };
  readonly jobs: readonly PlannedJob[];
  readonly before: DemandSummary;
  readonly after: DemandSummary;
  readonly proposal: PlanProposal;
}
