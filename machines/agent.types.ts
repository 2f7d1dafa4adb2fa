import type { DegradedAnswer } from '../src/degraded/decision-tree.ts';
import type {
  ChatMessage,
  EngineRequest,
  EngineResult,
  ToolCall,
  ToolDefinition,
} from '../src/engines/engine-types.ts';
import type { Fault } from '../src/faults/fault.ts';
import type { AgentMemory, ToolResultRecord, Turn } from '../src/runtime/turn.ts';

/*
 * The agent machine's plain-data types: its settings, context, the turn in progress, the inputs and outputs of
 * its named actors, and the events it takes, emits and sends the supervisor. Kept apart so the statechart file
 * holds the behaviour.
 */

/** Settings of one agent, fixed for its life. */
export interface AgentSettings {
  readonly name: string;
  readonly tier: string;
  readonly chain: string;
  readonly role?: string;
  readonly maxWaitMs: number;
  readonly maxAttempts: number;
  readonly maxTokens: number;
  readonly temperature?: number;
  readonly historyTurns: number;
  readonly probeIntervalMs: number;
  readonly tools: readonly ToolDefinition[];
}

/** The agent machine's input: its settings and (on resume) its remembered memory. */
export interface AgentInput {
  readonly settings: AgentSettings;
  readonly memory: AgentMemory;
}

/** The turn being worked on. Plain data: survives persistence. */
export interface ActiveTurn {
  readonly turnId: string;
  /** Prefix of every idempotency key of this turn (engine calls and tool calls). */
  readonly key: string;
  readonly prompt: string;
  readonly startedAt: number;
  /** This turn's messages: user prompt, tool calls, tool results. */
  readonly messages: readonly ChatMessage[];
  /** Engine call number inside the turn (grows with each tool round trip). */
  readonly step: number;
  /** Upstream attempts made for the current step. */
  readonly stepAttempts: number;
  /** Upstream attempts over the whole turn. */
  readonly attempts: number;
  readonly faults: readonly Fault[];
  readonly waitMs: number;
  readonly waitingSince?: number;
  readonly coolingUntil?: number;
  /** When cooling began (the WAIT's time): the live delay is `coolingUntil - coolingFrom`. */
  readonly coolingFrom?: number;
  readonly leaseId?: string;
  readonly endpointId?: string;
  readonly endpointIndex?: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
}

export interface AgentContext {
  readonly settings: AgentSettings;
  readonly memory: AgentMemory;
  readonly turn: ActiveTurn | null;
  /** The last finished turn (what `turn.completed` carried). */
  readonly lastTurn?: Turn;
}

/** What the `callEngine` actor resolves with: failures travel as data, never thrown. */
export type CallOutcome =
  | { readonly ok: true; readonly result: EngineResult; readonly at: number; readonly memoized: boolean }
  | { readonly ok: false; readonly fault: Fault; readonly at: number };

export interface CallEngineInput {
  readonly agent: string;
  readonly tier: string;
  readonly endpointId: string;
  readonly request: Omit<EngineRequest, 'signal'>;
  readonly waitMs: number;
}

export interface RunToolsInput {
  readonly agent: string;
  readonly keyPrefix: string;
  readonly turnId: string;
  readonly calls: readonly ToolCall[];
}

/** What `runTools` resolves with. A tool that throws gives an `isError` result for the model, not a thrown error. */
export interface RunToolsOutput {
  readonly results: readonly ToolResultRecord[];
  readonly at: number;
}

/** What `answerDegraded` resolves with. */
export interface AnswerDegradedOutput {
  readonly answer: DegradedAnswer;
  readonly at: number;
}

export interface AnswerDegradedInput {
  readonly agent: string;
  readonly prompt: string;
  readonly memory: AgentMemory;
  readonly reason: string;
}

export type AgentEvent =
  | { type: 'ASK'; turnId: string; key: string; prompt: string; at: number }
  | { type: 'CANCEL'; at: number }
  | { type: 'TICK'; at: number }
  | { type: 'TOKEN.GRANTED'; leaseId: string; endpointId: string; index: number; at: number }
  | { type: 'TOKEN.WAIT'; until: number; endpointId: string; at: number }
  | { type: 'TOKEN.DENIED'; reason: string; at: number }
  | { type: 'HEALTH.STATUS'; healthy: boolean; at: number }
  | { type: 'MEMORY.SET'; slots: Readonly<Record<string, string>> };

export type AgentEmitted = { type: 'turn.completed'; turn: Turn };

/** What the agent sends the supervisor (system id `supervisor`). */
export type AgentToSupervisorEvent =
  | {
      type: 'TOKEN.REQUEST';
      agent: string;
      tier: string;
      chain: string;
      /** A re-attempt charged to the retry budget. */
      retry: boolean;
      /** Upstream attempts already made for this engine call (0 = first). */
      attempt: number;
      maxWaitMs: number;
      estimatedTokens: number;
    }
  | { type: 'TOKEN.RELEASE'; agent: string; leaseId: string; outcome: CallOutcome; reservedTokens: number }
  | { type: 'TOKEN.WITHDRAW'; agent: string }
  | { type: 'HEALTH.CHECK'; agent: string; chain: string };
