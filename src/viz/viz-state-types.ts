import type { RuntimeEvent } from '../core/runtime-event.ts';
import type { StoredEventRow } from '../core/stored-event.ts';

/*
 * The visualizer's state and the events it folds, as types (and the one bound the state keeps). Bundled for the
 * browser with the reducer: types only, and plain constants.
 */

/**
 * Lines kept in {@link VizState.recent}.
 *
 * @example
 * ```ts
 * state.recent.length <= MAX_RECENT; // true
 * ```
 */
export const MAX_RECENT = 40;

/** One stretch of time an agent spent in one state. `to` is `null` while it is still in it. */
export interface VizSegment {
  readonly state: string;
  readonly from: number;
  readonly to: number | null;
}

/** A failed upstream attempt on an agent's timeline (a 429, an overload, a dropped connection…). */
export interface VizMarker {
  readonly at: number;
  /** The fault kind (`rate_limited`, `overloaded`, `network`, …). */
  readonly kind: string;
  readonly endpoint: string | null;
  readonly status: number | null;
  /** True for a 429 / `rate_limited`. */
  readonly rateLimited: boolean;
  /** The Retry-After the provider gave, ms; `null` when it gave none. */
  readonly retryAfterMs: number | null;
}

/**
 * One upstream attempt of an agent, as a span of its lane: from `from` (the attempt's start) to `to`
 * (its answer or fault), with what the call log says about it.
 */
export interface VizCall {
  readonly from: number;
  readonly to: number;
  readonly endpoint: string | null;
  /** `ok` or `fault`. */
  readonly outcome: string;
  /** The fault kind, or `ok`. */
  readonly kind: string;
  readonly status: number | null;
  readonly latencyMs: number | null;
  /** How long the agent waited for its token before this attempt (the latest grant's `waitedMs`). */
  readonly waitMs: number | null;
  /** 1 for the first attempt of a turn, 2 for the next… */
  readonly attempt: number;
  readonly retryAfterMs: number | null;
}

/** Why an agent is where it is: its latest failed upstream attempt, or the reason of a degraded turn. */
export interface VizReason {
  readonly at: number;
  readonly kind: string;
  readonly endpoint: string | null;
  readonly status: number | null;
  readonly retryAfterMs: number | null;
}

/** One agent as the visualizer shows it. */
export interface VizAgent {
  readonly name: string;
  readonly tier: string | null;
  readonly chain: string | null;
  readonly noAgent: boolean;
  /** Top-level state: idle, queued, calling, fallback, tools, cooling, degraded, stopped. */
  readonly state: string;
  /** Full state path when known (live: `degraded.resting`); `null` from the event log alone. */
  readonly path: string | null;
  /** When it entered `state`; `null` when not known. */
  readonly since: number | null;
  /** The endpoint of its latest grant, attempt or answer. */
  readonly lastEndpoint: string | null;
  /** When a `cooling` agent may try again (from the supervisor's wait). */
  readonly coolingUntil: number | null;
  /** Every state it went through, oldest first: the whole run, never cut (the page aggregates when zoomed out). */
  readonly segments: readonly VizSegment[];
  /** Every failed upstream attempt, oldest first. */
  readonly markers: readonly VizMarker[];
  /** Every upstream attempt, oldest first. */
  readonly calls: readonly VizCall[];
  /** The latest fault it met (or why its turn degraded); `null` when none yet. */
  readonly reason: VizReason | null;
  /** Attempts made in the turn it is on now. */
  readonly attempts: number;
  /** `waitedMs` of its latest token grant. */
  readonly lastWaitMs: number | null;
  readonly turns: number;
  readonly degradedTurns: number;
  readonly lastOutcome: string | null;
}

/** A rate bucket's level (RPM or TPM), when the runtime knows it. */
export interface VizBucket {
  readonly capacity: number | null;
  readonly available: number | null;
}

/** One engine endpoint (provider + key + model). */
export interface VizEndpoint {
  readonly id: string;
  readonly provider: string | null;
  readonly model: string | null;
  readonly keyFingerprint: string | null;
  readonly breaker: 'closed' | 'open' | 'halfOpen';
  readonly openUntil: number | null;
  readonly cooldownUntil: number;
  readonly disabledUntil: number;
  readonly disabledReason: string | null;
  readonly inFlight: number;
  readonly rpm: VizBucket | null;
  readonly tpm: VizBucket | null;
  readonly calls: number;
  readonly faults: number;
  readonly lastFault: { readonly at: number; readonly kind: string; readonly status: number | null } | null;
}

/** One token holder: an agent, or `probe:<endpoint>` for a HALF-OPEN probe. */
export interface VizHolder {
  /** `null` when the holder came from a live sample (which carries no lease ids). */
  readonly leaseId: string | null;
  readonly holder: string;
  readonly endpoint: string;
}

/** The supervisor's global concurrency tokens. */
export interface VizTokens {
  /** `null` until a live sample or the run's config tells it. */
  readonly limit: number | null;
  readonly held: number;
  readonly holders: readonly VizHolder[];
  /** Agents waiting for a token, by tier, in order. */
  readonly queue: Readonly<Record<string, readonly string[]>>;
}

/** The run the events belong to, when the log says. */
export interface VizRun {
  readonly runId: string | null;
  readonly scenario: string | null;
  readonly status: string;
  readonly rounds: number | null;
  /** The round running now (`round.started`), 0 before the first. */
  readonly round: number;
  /** The last committed round, 0 before the first. */
  readonly committedRound: number;
  /** When the run started and finished (run clock); `null` while not known. */
  readonly startedAt: number | null;
  readonly finishedAt: number | null;
  /** The report's checks, once the run's report is known (live: pushed at the end; replay: loaded). */
  readonly checks: readonly VizCheck[] | null;
}

/** One check of the run's report, as the page shows it. */
export interface VizCheck {
  readonly id: string;
  readonly name: string;
  readonly value: number | null;
  readonly unit: string;
  readonly op: string | null;
  readonly threshold: number | null;
  /** `true` PASS, `false` FAIL, `null` reported only. */
  readonly pass: boolean | null;
}

/** A report check as the page shows it: only its verdict fields (a report's check carries more). */
export function vizCheckOf(c: VizCheck): VizCheck {
  return {
    id: c.id,
    name: c.name,
    value: c.value,
    unit: c.unit,
    op: c.op,
    threshold: c.threshold,
    pass: c.pass,
  };
}

/**
 * The run's report, pushed to the live page once the run ended (never stored: the report is computed
 * from the event log).
 */
export interface VizReportEvent {
  readonly type: 'viz.report';
  readonly at: number;
  readonly agent?: undefined;
  readonly endpoint?: undefined;
  readonly data: { readonly status: string; readonly checks: readonly VizCheck[] };
}

/** A one-line summary of a recent event. */
export interface VizLine {
  readonly at: number;
  readonly type: string;
  readonly text: string;
}

/** Everything the page draws, as plain JSON. */
export interface VizState {
  /** Time of the latest event or sample folded in; `null` for the empty state. */
  readonly now: number | null;
  /** Number of events folded in. */
  readonly applied: number;
  readonly run: VizRun;
  readonly agents: Readonly<Record<string, VizAgent>>;
  readonly endpoints: Readonly<Record<string, VizEndpoint>>;
  readonly tokens: VizTokens;
  /** Newest last. */
  readonly recent: readonly VizLine[];
}

/** An endpoint's health as a live sample carries it (the shape of the runtime's `EndpointHealth`). */
export interface VizHealthSample {
  readonly id: string;
  readonly descriptor?: {
    readonly provider?: string;
    readonly model?: string;
    readonly keyFingerprint?: string;
  };
  readonly breaker: 'closed' | 'open' | 'halfOpen';
  readonly openUntil: number | null;
  readonly cooldownUntil: number;
  readonly disabledUntil: number;
  readonly disabledReason?: string;
  readonly inFlight: number;
  readonly rpm?: { readonly capacity?: number; readonly available?: number };
  readonly tpm?: { readonly capacity?: number; readonly available?: number };
}

/** An agent as a live sample carries it. */
export interface VizAgentSample {
  readonly name: string;
  readonly tier: string;
  readonly chain?: string;
  readonly noAgent?: boolean;
  readonly state: string;
  /** Full state path (`degraded.resting`). */
  readonly path?: string;
}

/**
 * What the live feed adds to the event log: the runtime's health, tokens and agents read at one instant
 * (bucket levels and exact queues are not in the events). Never stored; replay works without it.
 */
export interface VizSampleEvent {
  readonly type: 'viz.sample';
  readonly at: number;
  readonly agent?: undefined;
  readonly endpoint?: undefined;
  readonly data: {
    readonly endpoints?: readonly VizHealthSample[];
    readonly tokens?: {
      readonly limit: number;
      readonly held: number;
      readonly holders: readonly { readonly holder: string; readonly endpointId: string }[];
      readonly queue: readonly { readonly agent: string; readonly tier: string }[];
    };
    readonly agents?: readonly VizAgentSample[];
  };
}

/** What the reducer folds: a runtime event, or a live sample. */
export type VizEvent = RuntimeEvent | VizSampleEvent | VizReportEvent;

/** A stored event row, as the page reads it from the server: the event log's row (src/core/stored-event.ts). */
export type VizEventRecord = StoredEventRow;

/** Options of {@link emptyVizState}. */
export interface EmptyVizStateOptions {
  /** The token limit, when known up front (a run's config). Default `null`. */
  readonly limit?: number | null;
}
