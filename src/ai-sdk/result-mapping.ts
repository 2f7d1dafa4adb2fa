import type {
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3FinishReason,
  LanguageModelV3Usage,
} from '@ai-sdk/provider';
import type { ToolCall } from '../core/engine-types.ts';
import { isWhole } from '../core/token-usage.ts';
import type { Turn } from '../core/turn.ts';
import { BreakwaterTurnFailedError } from './ai-sdk-errors.ts';

/*
 * A finished turn as the AI SDK's V3 result fields (the way back of prompt-mapping.ts): shared by `doGenerate`'s
 * result and `doStream`'s last parts, so both say the same. `providerMetadata.breakwater` is breakwater-metadata.ts.
 */

/** A cancelled turn throws the abort's own reason (as fetch would); a failed one a BreakwaterTurnFailedError. */
export function throwIfUnanswered(turn: Turn, options: LanguageModelV3CallOptions): void {
  if (turn.outcome === 'cancelled') throw options.abortSignal?.reason ?? new BreakwaterTurnFailedError(turn);
  if (turn.outcome === 'failed') throw new BreakwaterTurnFailedError(turn);
}

/** A tool call the model made, as the V3 content part the AI SDK runs. */
export function toolCallPart(call: ToolCall): Extract<LanguageModelV3Content, { type: 'tool-call' }> {
  return {
    type: 'tool-call',
    toolCallId: call.id,
    toolName: call.name,
    input: JSON.stringify(call.arguments),
  };
}

/** The V3 response metadata of the turn: its id, when it finished, the model. */
export function responseOf(turn: Turn) {
  return {
    id: turn.turnId,
    timestamp: new Date(turn.finishedAt),
    ...(turn.model !== undefined ? { modelId: turn.model } : {}),
  };
}

/** Why the turn ended, as V3 says it (`raw` keeps the provider's stop reason). */
export function finishReasonOf(turn: Turn): LanguageModelV3FinishReason {
  if (turn.degraded) return { unified: 'stop', raw: 'degraded' };
  if (turn.toolCalls?.length) return { unified: 'tool-calls', raw: turn.stopReason };
  switch (turn.stopReason) {
    case 'max_tokens':
      return { unified: 'length', raw: turn.stopReason };
    case 'refusal':
      return { unified: 'content-filter', raw: turn.stopReason };
    case 'end_turn':
    case undefined:
      return { unified: 'stop', raw: turn.stopReason };
    default:
      return { unified: 'other', raw: turn.stopReason };
  }
}

/**
 * The turn's usage as the V3 spec has it: a count the providers did not wholly report is `undefined` (the spec's "not
 * available"), never 0, a part or an estimate; those are in `providerMetadata.breakwater.usage`.
 */
export function usageOf(turn: Turn): LanguageModelV3Usage {
  const u = turn.usage;
  return {
    inputTokens: {
      total: isWhole(u, 'inputTokens') ? u.inputTokens! : undefined,
      noCache: undefined,
      cacheRead: undefined,
      cacheWrite: undefined,
    },
    outputTokens: {
      total: isWhole(u, 'outputTokens') ? u.outputTokens! : undefined,
      text: undefined,
      reasoning: undefined,
    },
  };
}
