import type { ChatMessage, StopReason, ToolCall, ToolDefinition, Usage } from './engine-types.ts';
import { decodeUsage, NO_USAGE } from './token-usage.ts';
import type { Fault } from './fault.ts';

/**
 * How a turn ended.
 * - `answered`: the chain's first endpoint answered.
 * - `fallback`: a later endpoint of the chain answered.
 * - `degraded`: no engine could answer in time; the answer comes from the degraded layer and says so.
 * - `failed`: a fault no engine swap can fix (bad request, a bug); `error` says what.
 * - `cancelled`: the caller aborted.
 * - `no_agent`: plain code ran (no LLM).
 *
 * @example
 * ```ts
 * const ok = (o: TurnOutcome) => o === 'answered' || o === 'fallback';
 * ```
 */
export type TurnOutcome = 'answered' | 'fallback' | 'degraded' | 'failed' | 'cancelled' | 'no_agent';

/**
 * The answer of a turn.
 *
 * @example
 * ```ts
 * const text = turn.answer.degraded ? `(degraded) ${turn.answer.text}` : turn.answer.text;
 * ```
 */
export interface TurnAnswer {
  readonly text: string;
  /** Present on degraded answers: the structured summary and where it came from. */
  readonly degraded?: DegradedAnswer;
}

/**
 * One finished turn of one agent: what `agent.ask()` resolves with. Plain data.
 *
 * @example
 * ```ts
 * const turn: Turn = await agent.ask('Item 3?');
 * console.log(turn.outcome, turn.endpointId, turn.faults.map((f) => f.kind), turn.waitMs);
 * ```
 */
export interface Turn {
  readonly turnId: string;
  readonly agent: string;
  readonly tier: string;
  readonly prompt: string;
  readonly answer: TurnAnswer;
  readonly outcome: TurnOutcome;
  /** The endpoint that gave the answer (absent when degraded, failed or cancelled). */
  readonly endpointId?: string;
  readonly model?: string;
  readonly degraded: boolean;
  readonly degradedReason?: string;
  /** Every fault met on the way, in order. */
  readonly faults: readonly Fault[];
  /** Time spent waiting for a token or a cooldown, ms. */
  readonly waitMs: number;
  /** Upstream calls made (retries and fallbacks included; memoized results count 0). */
  readonly attempts: number;
  /**
   * Tokens of the turn's upstream calls, as the providers reported them: a count none reported (a stream cut before
   * its usage, a server that sends none) is `null`, with breakwater's estimate apart in `usage.estimated`.
   */
  readonly usage: Usage;
  /** Tool calls and results exchanged inside this turn, in order. */
  readonly messages: readonly ChatMessage[];
  /** Why the model stopped, when an engine answered (`answered`, `fallback`). */
  readonly stopReason?: StopReason;
  /**
   * The tool calls of the last answer that breakwater did not run: calls of tools without `run` (the caller runs
   * them and calls again with their results, as the AI SDK does). Absent when there are none.
   */
  readonly toolCalls?: readonly ToolCall[];
  readonly startedAt: number;
  readonly finishedAt: number;
  /** For `failed`: one line saying what went wrong and what to do. */
  readonly error?: string;
}

/** A tool result remembered in the agent's memory. */
export interface ToolResultRecord {
  readonly turnId: string;
  readonly call: ToolCall;
  readonly result: string;
  readonly isError: boolean;
}

/** One earlier exchange kept in the agent's memory. */
export interface Utterance {
  readonly turnId: string;
  readonly prompt: string;
  readonly answer: string;
  readonly endpointId?: string;
  readonly degraded: boolean;
}

/**
 * An agent's working memory: what a resumed or engine-swapped agent needs to send the prompt it
 * would have sent. Plain JSON; committed per round.
 */
export interface AgentMemory {
  readonly utterances: readonly Utterance[];
  readonly slots: Readonly<Record<string, string>>;
  readonly toolResults: readonly ToolResultRecord[];
}

/** An empty memory with the given slots. */
export function emptyMemory(slots: Readonly<Record<string, string>> = {}): AgentMemory {
  // Memory is never mutated (every change is a copy), so every agent can start from the same empty lists.
  return { utterances: NO_UTTERANCES, slots: { ...slots }, toolResults: NO_TOOL_RESULTS };
}

const NO_UTTERANCES: readonly Utterance[] = Object.freeze([]);
const NO_TOOL_RESULTS: readonly ToolResultRecord[] = Object.freeze([]);

/**
 * The usage a turn in progress has so far. A turn snapshotted before usage could be unknown holds its two numbers
 * (`inputTokens`, `outputTokens`) instead: read as reported, which is what they claimed to be.
 *
 * @example
 * ```ts
 * usageSoFar({ inputTokens: 12, outputTokens: 40 }); // { inputTokens: 12, outputTokens: 40, source: 'reported' }
 * ```
 */
export function usageSoFar(t: {
  readonly usage?: Usage | undefined;
  readonly inputTokens?: number | undefined;
  readonly outputTokens?: number | undefined;
}): Usage {
  if (t.usage) return t.usage;
  if (t.inputTokens === undefined && t.outputTokens === undefined) return NO_USAGE;
  return decodeUsage({ inputTokens: t.inputTokens ?? 0, outputTokens: t.outputTokens ?? 0 }) ?? NO_USAGE;
}

/** Where a degraded answer came from. `summary` = the generic summary of the agent's memory and item. */
export type DegradedSource = 'decision_tree' | 'cache' | 'summary';

/** An answer given without any engine. Plain, frozen data: safe to log, persist and show. */
export interface DegradedAnswer {
  /** The answer itself, readable as it is. */
  readonly summary: string;
  /** Structured parts of the answer (what a caller may act on). */
  readonly fields?: Readonly<Record<string, unknown>>;
  readonly source: DegradedSource;
  /** Why the answer is degraded (e.g. "all engines open"), or, from a bare tree, which rule answered. */
  readonly reason: string;
  /** What the answer rests on: the rule that matched, the earlier prompt it was cached for, the memory. */
  readonly basis?: string;
  /** For `cache` answers: similarity (0–1] of the cached prompt to this one; 1 for an exact hit. */
  readonly similarity?: number;
}

/** What the prompt of one engine call is made of. */
export interface PromptParts {
  readonly role?: string;
  readonly memory: AgentMemory;
  /** Earlier turns kept verbatim. */
  readonly historyTurns: number;
  /** This turn's messages so far: the user prompt, then tool calls and results. */
  readonly turnMessages: readonly ChatMessage[];
  readonly tools: readonly ToolDefinition[];
  readonly maxTokens: number;
  readonly temperature?: number;
  readonly idempotencyKey: string;
}
