import type { ChatMessage, EngineResult, ToolCall, ToolDefinition, Usage } from '../src/core/engine-types.ts';
import type { Fault } from '../src/core/fault.ts';
import type { AgentMemory, DegradedAnswer, PromptParts, ToolResultRecord, Turn } from '../src/core/turn.ts';

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
  /** Earlier turns the prompt repeats verbatim; memory keeps exactly these (the full log is the turns store). */
  readonly historyTurns: number;
  /** Tool results the prompt repeats; memory keeps exactly these. */
  readonly toolResultsKept: number;
  readonly probeIntervalMs: number;
  readonly tools: readonly ToolDefinition[];
  /**
   * Tools the caller runs itself (they have no `run`): a model asking for one ends the turn with its tool calls
   * (`turn.toolCalls`) instead of running them. Default none.
   */
  readonly clientTools?: readonly string[];
}

/** The agent machine's input: its settings and (on resume) its remembered memory. */
export interface AgentInput {
  readonly settings: AgentSettings;
  readonly memory: AgentMemory;
}

/**
 * A streamed step's text so far, kept when its call failed after content had come: the next attempt continues it
 * (as an assistant prefix) or withdraws it (restart). `sources`: characters per endpoint, in order.
 */
export interface PartialAnswer {
  readonly text: string;
  readonly sources: readonly { readonly endpointId: string; readonly chars: number }[];
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
  /**
   * How many of `messages` the caller gave (a one-off call's conversation); the rest were exchanged inside the
   * turn. Absent: 1 (the prompt).
   */
  readonly given?: number;
  /** Engine call number inside the turn (grows with each tool round trip). */
  readonly step: number;
  /** Upstream attempts made for the current step. */
  readonly stepAttempts: number;
  /** Upstream attempts over the whole turn. */
  readonly attempts: number;
  readonly faults: readonly Fault[];
  readonly waitMs: number;
  readonly waitingSince?: number;
  /** While cooling: when to ask for a token again (absolute, so a restored actor wakes at the same instant). */
  readonly coolingUntil?: number;
  /** While cooling: when this cooling began. */
  readonly coolingFrom?: number;
  /** Time cooled since the last grant (or the ask), ms: it counts against the max wait. Absent: none. */
  readonly cooledMs?: number;
  readonly leaseId?: string;
  readonly endpointId?: string;
  readonly endpointIndex?: number;
  /**
   * Tokens of the turn's answered calls so far, as their providers reported them (estimates apart, see `Usage`).
   * Absent in a snapshot taken before usage could be unknown: it has `inputTokens` and `outputTokens` instead
   * (read both with `usageSoFar`).
   */
  readonly usage?: Usage;
  /** @deprecated Snapshots before `usage`: read with `usageSoFar`. */
  readonly inputTokens?: number;
  /** @deprecated Snapshots before `usage`: read with `usageSoFar`. */
  readonly outputTokens?: number;
  /** The caller streams this turn: engine calls stream, and a fault after content keeps the partial answer. */
  readonly stream?: true;
  /** The current step's streamed text kept after a mid-stream fault (see {@link PartialAnswer}). */
  readonly partial?: PartialAnswer;
}

export interface AgentContext {
  readonly settings: AgentSettings;
  readonly memory: AgentMemory;
  readonly turn: ActiveTurn | null;
  /** The last finished turn (what `turn.completed` carried). */
  readonly lastTurn?: Turn;
  /** While degraded and resting: when to check the chain's health again (absolute). */
  readonly recheckAt?: number;
}

/**
 * What the engine call (`startCall`) reports with `CALL.DONE`: failures travel as data, never thrown. `leaseLost`: the grant was
 * gone before the call could start (a restored actor, a lease taken back): nothing was sent, ask again.
 */
export type CallOutcome =
  | { readonly ok: true; readonly result: EngineResult; readonly at: number; readonly memoized: boolean }
  | {
      readonly ok: false;
      readonly fault: Fault;
      readonly at: number;
      readonly leaseLost?: true;
      /** A streamed call: the step's text the caller holds now (what the next attempt continues or withdraws). */
      readonly partial?: PartialAnswer;
      /**
       * What the failed call used, by what its provider bills: a reported 0 when it was refused with an HTTP status
       * (or never sent), unknown with an estimate when it was cut after it was sent. Absent (outcomes of older
       * snapshots): a reported 0.
       */
      readonly usage?: Usage;
    };

export interface CallEngineInput {
  readonly agent: string;
  /** The turn the call belongs to (its attempts are reported with it). */
  readonly turnId: string;
  readonly tier: string;
  /** The grant the call spends (the implementation claims it, and releases it with the outcome). */
  readonly leaseId: string;
  readonly endpointId: string;
  /** The endpoint's place in the agent's chain (0 = primary). */
  readonly chainPosition: number;
  /** What the request is built from (the runtime builds it: the same memory gives the same prompt). */
  readonly prompt: PromptParts;
  readonly waitMs: number;
  /** Stream the call (the turn is streamed); absent: a plain call. */
  readonly stream?: true;
  /** The engine call number inside the turn (a streamed turn's events say when a new step starts). */
  readonly step?: number;
  /** A streamed step's text kept from a failed attempt: continued or withdrawn by this one. */
  readonly partial?: PartialAnswer;
}

/** What the `acquireToken` actor asks the scheduler for. */
export interface AcquireTokenInput {
  readonly agent: string;
  readonly tier: string;
  readonly chain: string;
  /** A re-attempt, charged to the retry budget when it goes to an endpoint it was `tried` on. */
  readonly retry: boolean;
  /** Upstream attempts already made for this engine call (0 = first). */
  readonly attempt: number;
  /** Endpoints this engine call already failed on (absent on a first attempt). */
  readonly tried?: readonly string[];
  /**
   * Endpoints the call must not go to: those that answered its request is too large for them, and once its
   * `maxAttempts` are spent every one it tried. Absent: none.
   */
  readonly skip?: readonly string[];
  readonly maxWaitMs: number;
  /** Time cooled since the last grant (or the ask), ms: the scheduler lets it wait only what is left. */
  readonly cooledMs?: number;
  /** The next call's prompt parts: the runtime estimates its tokens for TPM pacing. */
  readonly prompt: PromptParts;
}

/** The scheduler's answer as plain data (it is kept in the snapshot). */
export type TokenAnswer =
  | {
      readonly kind: 'granted';
      readonly leaseId: string;
      readonly endpointId: string;
      readonly index: number;
      readonly at: number;
    }
  | { readonly kind: 'cool'; readonly endpointId: string; readonly until: number; readonly at: number }
  | { readonly kind: 'denied'; readonly reason: string; readonly at: number };

/** A {@link TokenAnswer} that granted a token. */
export type GrantedAnswer = Extract<TokenAnswer, { readonly kind: 'granted' }>;

/** Input of the `wakeAt` timer actor: resolves once the clock reaches `at`. */
export interface WakeAtInput {
  readonly at: number;
}

export interface CheckHealthInput {
  readonly agent: string;
  readonly chain: string;
}

/** What `checkHealth` resolves with: whether some endpoint of the chain can take a call now. */
export interface CheckHealthOutput {
  readonly healthy: boolean;
  readonly at: number;
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

/** Events the agent takes from its handle. Everything else reaches it as the output of its own actors. */
export type AgentEvent =
  | {
      type: 'ASK';
      turnId: string;
      key: string;
      prompt: string;
      at: number;
      /** The whole conversation to send (a one-off call); default: `prompt` as one user message. */
      messages?: readonly ChatMessage[];
      /** The caller streams the turn. Default: not streamed. */
      stream?: true;
      /**
       * A token the runtime took at once for the turn's first call (a token was free and nobody waited): the
       * agent goes from idle straight to calling, in one step. `turn` is the turn it was asked for (the same
       * prompt parts, so the request built for the token estimate is the one sent). Absent: the turn queues.
       */
      ready?: { readonly grant: GrantedAnswer; readonly turn: ActiveTurn };
    }
  | { type: 'CANCEL'; at: number }
  | { type: 'MEMORY.SET'; slots: Readonly<Record<string, string>> }
  /** From `acquireToken`: the scheduler's answer (or the request failed: a bug). */
  | { type: 'TOKEN.ANSWER'; output: TokenAnswer }
  | { type: 'TOKEN.FAILED'; error: unknown }
  /** From the engine call (`startCall`): how the call ended, failures as data (or it threw: a bug). */
  | { type: 'CALL.DONE'; output: CallOutcome }
  | { type: 'CALL.FAILED'; error: unknown }
  /** From `wakeAt`: the deadline is reached. */
  | { type: 'WAKE'; output: { at: number } }
  /** From the runtime at `at`: an endpoint appeared (a BYOK key) or came back (its breaker closed); a cooling agent asks again at once. */
  | { type: 'RECHECK'; at: number };

export type AgentEmitted = { type: 'turn.completed'; turn: Turn };
