import type { Usage } from '../core/engine-types.ts';
import type { Fault } from '../core/fault.ts';
import type { RunStatus, TurnOutcome } from './store-schema.ts';

/**
 * Plain data going into and coming out of the {@link RunStore}. Every JSON field accepts any
 * JSON-serializable value (it is stored as `JSON.parse(JSON.stringify(value))`)
 * and comes back as parsed JSON: validate what you read before trusting its shape. Times are epoch ms.
 */

/**
 * Options every store call takes.
 *
 * @example
 * ```ts
 * await store.getRun(runId, { signal: AbortSignal.timeout(5_000) });
 * ```
 */
export interface StoreCallOptions {
  /** Checked before each statement; `commitRound` is one statement: it commits whole or not at all. */
  readonly signal?: AbortSignal;
}

/**
 * Input of `createRun`.
 *
 * @example
 * ```ts
 * await store.createRun({ runId: 'r-1', scenario: 'monday-briefing', config, totalRounds: 3, machineVersion: 'agent@1' });
 * ```
 */
export interface CreateRunInput {
  readonly runId: string;
  /** The scenario's name or path. */
  readonly scenario: string;
  /** The resolved configuration the run started with (never a key: pass ids, fingerprints and settings only). Default `{}`. */
  readonly config?: unknown;
  readonly totalRounds: number;
  /** Version of the agent machine; snapshots are restored only by the same version. */
  readonly machineVersion: string;
}

/**
 * A stored run.
 *
 * @example
 * ```ts
 * const next = run.currentRound + 1; if (next > run.totalRounds) await store.setRunStatus(run.runId, 'completed');
 * ```
 */
export interface RunRecord {
  readonly runId: string;
  readonly scenario: string;
  readonly config: unknown;
  readonly status: RunStatus;
  /** Last committed round; 0 = none yet. The next round to run is `currentRound + 1`. */
  readonly currentRound: number;
  readonly totalRounds: number;
  readonly machineVersion: string;
  readonly createdAt: number;
  readonly updatedAt: number;
  /** Set when the status became `completed` or `failed`; `null` otherwise. */
  readonly finishedAt: number | null;
  /** For a `failed` run: why, in one line; `null` otherwise. */
  readonly failure: string | null;
}

/**
 * Options of `listRuns`.
 *
 * @example
 * ```ts
 * await store.listRuns({ status: 'interrupted', limit: 10 });
 * ```
 */
export interface ListRunsOptions extends StoreCallOptions {
  /** Only runs with this status. Default: all. */
  readonly status?: RunStatus;
  /** At most this many, newest first. Default: all. */
  readonly limit?: number;
}

/**
 * One agent's turn on one agenda item, as handed to `commitRound`.
 *
 * @example
 * ```ts
 * const t: TurnInput = { itemId: 'agenda-1', agent: 'analyst', prompt: request.messages, answer: { text: result.text }, outcome: 'answered', endpointId: result.endpoint.id, usage: result.usage, idempotencyKey: request.idempotencyKey };
 * ```
 */
export interface TurnInput {
  readonly itemId: string;
  readonly agent: string;
  /** The messages sent (system prompt included), exactly as the engine got them. */
  readonly prompt: unknown;
  /** The answer (text, tool calls, degraded notice). Default `null` (e.g. a failed turn). */
  readonly answer?: unknown;
  readonly outcome: TurnOutcome;
  /** The endpoint that answered. Default `null`. */
  readonly endpointId?: string | null;
  /** Answered by the degraded layer. Default `false`. */
  readonly degraded?: boolean;
  /** Default `null`. */
  readonly usage?: Usage | null;
  /** Faults met on the way (fallbacks, cooldowns). Default `[]`. */
  readonly faults?: readonly Fault[];
  /** Time spent waiting for tokens and cooldowns. Default 0. */
  readonly waitMs?: number;
  /** Key of the engine call whose result is the answer. Default `null` (no call, e.g. `no_agent`). */
  readonly idempotencyKey?: string | null;
  /**
   * The order in which this agent finished its turns of this round (0, 1, …), when it differs from the order of
   * `turns`. The store numbers each agent's turns across the run from it (`agentSeq`). Default: the position.
   */
  readonly agentOrder?: number;
}

/**
 * A committed turn.
 *
 * @example
 * ```ts
 * const transcript = (await store.listTurns(runId)).filter((t) => t.agent === 'analyst');
 * ```
 */
export interface TurnRecord {
  readonly runId: string;
  readonly round: number;
  /** Order inside the round, as given to `commitRound`. */
  readonly position: number;
  readonly itemId: string;
  readonly agent: string;
  /** The order in which the agent finished its turns over the whole run: 1, 2, 3, … */
  readonly agentSeq: number;
  readonly prompt: unknown;
  readonly answer: unknown;
  readonly outcome: TurnOutcome;
  readonly endpointId: string | null;
  readonly degraded: boolean;
  readonly usage: Usage | null;
  readonly faults: readonly Fault[];
  readonly waitMs: number;
  readonly idempotencyKey: string | null;
}

/**
 * One agent's state, as handed to `commitRound`: what a resumed agent needs that the turns log does not hold.
 * Its utterances are NOT here: they are the agent's last turns (`recentTurns`). Checked on load, not on save.
 *
 * @example
 * ```ts
 * const s: AgentStateInput = { agent: 'analyst', snapshot: slimSnapshot, slots: { desk: 'fx' }, toolResults: [] };
 * ```
 */
export interface AgentStateInput {
  readonly agent: string;
  /** The agent actor's XState persisted snapshot, without its settings, utterances and last turn. */
  readonly snapshot: unknown;
  readonly slots: Readonly<Record<string, unknown>>;
  readonly toolResults: readonly unknown[];
  /** Default: the run's `machineVersion`. */
  readonly machineVersion?: string;
}

/**
 * An agent's stored state, validated.
 *
 * @example
 * ```ts
 * const { snapshot, slots } = (await store.loadAgentStates(runId, { machineVersion }))['analyst']!;
 * ```
 */
export interface AgentStateRecord {
  readonly runId: string;
  readonly agent: string;
  /** The round in which the state last changed. */
  readonly lastRound: number;
  readonly machineVersion: string;
  readonly snapshot: Readonly<Record<string, unknown>>;
  readonly slots: Readonly<Record<string, unknown>>;
  readonly toolResults: readonly unknown[];
}

/**
 * Input of `commitRound`.
 *
 * @example
 * ```ts
 * await store.commitRound({ runId, round: run.currentRound + 1, turns, snapshots, summary: { degraded: 1 } });
 * ```
 */
export interface CommitRoundInput {
  readonly runId: string;
  /** Must be the run's `currentRound + 1`. */
  readonly round: number;
  /** At most one per (itemId, agent). */
  readonly turns: readonly TurnInput[];
  /**
   * Agents' states, at most one per agent. Only those that differ from what this store last committed for the
   * run are written (an unchanged agent costs nothing). Default none.
   */
  readonly states?: readonly AgentStateInput[];
  /** Every endpoint's health at the commit (restored on resume). Default `null`. */
  readonly health?: unknown;
  /** Anything the report wants per round. Default `null`. */
  readonly summary?: unknown;
  /**
   * The round's events (its `turn.completed`s, its `round.committed`, …), in log order: written by the same
   * statement, numbered after the run's last event. They exist exactly when the round does — a round that never
   * commits leaves none, a committed one never lacks them. Default none.
   */
  readonly events?: readonly LogEventInput[];
}

/**
 * A committed round.
 *
 * @example
 * ```ts
 * for (const r of await store.listRounds(runId)) console.log(r.round, new Date(r.committedAt));
 * ```
 */
export interface RoundRecord {
  readonly runId: string;
  readonly round: number;
  readonly committedAt: number;
  readonly summary: unknown;
  /** The endpoints' health committed with the round, or `null`. */
  readonly health: unknown;
}

/**
 * Input of `rememberCall`.
 *
 * @example
 * ```ts
 * await store.rememberCall({ runId, idempotencyKey: request.idempotencyKey, result });
 * ```
 */
export interface RememberCallInput<T> {
  readonly runId: string;
  readonly idempotencyKey: string;
  /** The successful result (an `EngineResult`, a tool's output). */
  readonly result: T;
}

/**
 * One event for `appendEvents`.
 *
 * @example
 * ```ts
 * const e: EventInput = { seq: 42, at: clock.now(), type: 'BREAKER_OPENED', endpoint: 'primary-openai', data: { failures: 3 } };
 * ```
 */
export interface EventInput {
  /** Caller-assigned order inside the run (integer). */
  readonly seq: number;
  /** Epoch ms on the runtime's clock. */
  readonly at: number;
  readonly type: string;
  /** Default `null`. */
  readonly agent?: string | null;
  /** Endpoint id. Default `null`. */
  readonly endpoint?: string | null;
  /** Default `{}`. */
  readonly data?: unknown;
}

/**
 * An event the store numbers itself: `seq` follows the run's last event in the log.
 *
 * @example
 * ```ts
 * await store.commitRound({ runId, round, turns, events: [{ at: clock.now(), type: 'round.committed', data: { round } }] });
 * ```
 */
export type LogEventInput = Omit<EventInput, 'seq'>;

/**
 * A stored event.
 *
 * @example
 * ```ts
 * const last = (await store.readEvents(runId)).at(-1)?.seq ?? 0;
 * ```
 */
export interface EventRecord {
  /** Global insertion id (ties inside one `seq` are read in this order). */
  readonly id: number;
  readonly runId: string;
  readonly seq: number;
  readonly at: number;
  readonly type: string;
  readonly agent: string | null;
  readonly endpoint: string | null;
  readonly data: unknown;
}

/**
 * Options of `readEvents`.
 *
 * @example
 * ```ts
 * await store.readEvents(runId, { afterSeq: 100, untilAt: clock.now(), limit: 500 });
 * ```
 */
export interface ReadEventsOptions extends StoreCallOptions {
  /** Only events with `seq > afterSeq`. Default: from the start. */
  readonly afterSeq?: number;
  /** Only events with `at <= untilAt`. Default: no bound. */
  readonly untilAt?: number;
  /** At most this many. Default: all. */
  readonly limit?: number;
}

/**
 * Options of `recentTurns`.
 *
 * @example
 * ```ts
 * await store.recentTurns(runId, { agents: ['Kai'], limit: 6, outcomes: ['answered', 'fallback', 'degraded'] });
 * ```
 */
export interface RecentTurnsOptions extends StoreCallOptions {
  readonly agents: readonly string[];
  /** At most this many per agent (the last ones). */
  readonly limit: number;
  /** Only turns with one of these outcomes. Default: all. */
  readonly outcomes?: readonly TurnOutcome[];
}

/**
 * Options of `loadAgentStates`.
 *
 * @example
 * ```ts
 * await store.loadAgentStates(runId, { machineVersion: AGENT_MACHINE_VERSION });
 * ```
 */
export interface LoadStatesOptions extends StoreCallOptions {
  /** The agent machine version of this runtime; a state written by another version is refused. */
  readonly machineVersion: string;
}
