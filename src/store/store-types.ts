import type { Usage } from '../engines/engine-types.ts';
import type { Fault } from '../faults/fault.ts';
import type { RunStatus, TurnOutcome } from './store-schema.ts';

/**
 * Plain data going into and coming out of the {@link RunStore}. Every JSON field accepts any
 * JSON-serializable value (it is stored as `JSON.parse(JSON.stringify(value))`, secrets scrubbed)
 * and comes back as parsed JSON: validate what you read before trusting its shape. Times are epoch ms.
 */

/** Options every store call takes. */
export interface StoreCallOptions {
  /** Checked before each statement; aborting inside `commitRound` rolls the round back. */
  readonly signal?: AbortSignal;
}

/** Input of `createRun`. */
export interface CreateRunInput {
  readonly runId: string;
  /** The scenario's name or path. */
  readonly scenario: string;
  /** The resolved configuration the run started with (no keys: they are scrubbed anyway). Default `{}`. */
  readonly config?: unknown;
  readonly totalRounds: number;
  /** Version of the agent machine; snapshots are restored only by the same version. */
  readonly machineVersion: string;
}

/** A stored run. */
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
}

/** Options of `listRuns`. */
export interface ListRunsOptions extends StoreCallOptions {
  /** Only runs with this status. Default: all. */
  readonly status?: RunStatus;
  /** At most this many, newest first. Default: all. */
  readonly limit?: number;
}

/** One agent's turn on one agenda item, as handed to `commitRound`. */
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
}

/** A committed turn. */
export interface TurnRecord {
  readonly runId: string;
  readonly round: number;
  /** Order inside the round, as given to `commitRound`. */
  readonly position: number;
  readonly itemId: string;
  readonly agent: string;
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
 * What a resumed agent needs besides the transcript: checked with zod on write and on restore.
 * `actorSnapshot` is `actor.getPersistedSnapshot()` of the agent's XState actor.
 */
export interface AgentSnapshotData {
  readonly utterances: readonly unknown[];
  readonly memory: Readonly<Record<string, unknown>>;
  readonly toolResults: readonly unknown[];
  readonly actorSnapshot: unknown;
}

/** One agent's snapshot, as handed to `commitRound`. */
export interface SnapshotInput {
  readonly agent: string;
  readonly data: AgentSnapshotData;
  /** Default: the run's `machineVersion`. */
  readonly machineVersion?: string;
}

/** A restored snapshot. */
export interface AgentSnapshotRecord {
  readonly runId: string;
  readonly agent: string;
  /** The round it was committed with. */
  readonly round: number;
  readonly machineVersion: string;
  readonly data: AgentSnapshotData;
}

/** Input of `commitRound`. */
export interface CommitRoundInput {
  readonly runId: string;
  /** Must be the run's `currentRound + 1`. */
  readonly round: number;
  /** At most one per (itemId, agent). */
  readonly turns: readonly TurnInput[];
  /** At most one per agent. */
  readonly snapshots: readonly SnapshotInput[];
  /** Anything the report wants per round. Default `null`. */
  readonly summary?: unknown;
}

/** A committed round. */
export interface RoundRecord {
  readonly runId: string;
  readonly round: number;
  readonly committedAt: number;
  readonly summary: unknown;
}

/** Input of `rememberCall`. */
export interface RememberCallInput<T> {
  readonly runId: string;
  readonly idempotencyKey: string;
  /** The successful result (an `EngineResult`, a tool's output). */
  readonly result: T;
}

/** One event for `appendEvents`. */
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

/** A stored event. */
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

/** Options of `readEvents`. */
export interface ReadEventsOptions extends StoreCallOptions {
  /** Only events with `seq > afterSeq`. Default: from the start. */
  readonly afterSeq?: number;
  /** Only events with `at <= untilAt`. Default: no bound. */
  readonly untilAt?: number;
  /** At most this many. Default: all. */
  readonly limit?: number;
}

/** Options of `loadLatestSnapshots`. */
export interface LoadSnapshotsOptions extends StoreCallOptions {
  /** The agent machine version of this runtime; a snapshot written by another version is refused. */
  readonly machineVersion: string;
}
