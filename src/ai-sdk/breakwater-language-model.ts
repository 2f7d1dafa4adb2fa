import type {
  JSONObject,
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3FinishReason,
  LanguageModelV3GenerateResult,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
  LanguageModelV3Usage,
} from '@ai-sdk/provider';
import type { DegradedAnswer } from '../degraded/decision-tree.ts';
import type { DegradedContext } from '../runtime/agent-definition.ts';
import type { Supervisor } from '../runtime/supervisor-types.ts';
import type { Turn } from '../runtime/turn.ts';
import { BreakwaterTurnFailedError } from './ai-sdk-errors.ts';
import { mapCallOptions } from './prompt-mapping.ts';

/**
 * Settings of one model (`bw('premium', settings)`); each overrides the provider's default of the same name.
 *
 * @example
 * ```ts
 * const model = bw('premium', { tier: 'analysis', maxWaitMs: 20_000 });
 * ```
 */
export interface BreakwaterModelSettings {
  /** Priority tier of the calls' tokens (one of the config's `tiers`). Default: the last (lowest) tier. */
  readonly tier?: string;
  /** Output token cap when the call gives no `maxOutputTokens`. Default: the config's `agentDefaults.maxTokens`. */
  readonly maxTokens?: number;
  /** How long a call may wait for a token or a cooldown before it answers degraded, ms. Default: `agentDefaults.maxWaitMs`. */
  readonly maxWaitMs?: number;
  /** Upstream attempts per call before it answers degraded. Default: `agentDefaults.maxAttempts`. */
  readonly maxAttempts?: number;
  /** Structured answer when no engine can answer. Default: breakwater's summary of the prompt. */
  readonly decisionTree?: (context: DegradedContext) => DegradedAnswer;
}

/**
 * Which endpoint answered and what was met on the way: `result.providerMetadata.breakwater`.
 *
 * @example
 * ```ts
 * const m = result.providerMetadata?.breakwater as BreakwaterMetadata;
 * console.log(m.outcome, m.endpointId, m.faults);
 * ```
 */
export interface BreakwaterMetadata extends JSONObject {
  /** `answered` (the chain's first endpoint), `fallback` (a later one) or `degraded` (no engine could answer). */
  outcome: string;
  /** The endpoint that answered; absent when degraded. */
  endpointId?: string;
  /** The model the provider reported. */
  model?: string;
  degraded: boolean;
  degradedReason?: string;
  /** Every fault met, in order: kind, endpoint, HTTP status and message. */
  faults: Array<{ kind: string; endpointId?: string; status?: number; message: string }>;
  /** Upstream calls made (retries and fallbacks included). */
  attempts: number;
  /** Time spent waiting for a token or a cooldown, ms. */
  waitMs: number;
  turnId: string;
}

/**
 * A breakwater chain as an AI SDK `LanguageModelV3`: every `doGenerate`/`doStream` is one `supervisor.call`
 * (tokens, breakers, cooldowns, fallback along the chain, the degraded layer). Tools are offered to the model
 * and their calls handed back to the AI SDK, which runs them and calls again.
 *
 * `doStream` is not token-by-token yet: the call runs to its end through the chain (a fallback mid-stream would
 * otherwise show the user two answers), then the finished turn is emitted as stream parts.
 *
 * @example
 * ```ts
 * const model = new BreakwaterLanguageModel(supervisor, 'premium', { tier: 'analysis' });
 * const { text } = await generateText({ model, prompt: 'Hi' });
 * ```
 */
export class BreakwaterLanguageModel implements LanguageModelV3 {
  readonly specificationVersion = 'v3' as const;
  readonly provider = 'breakwater';
  /** The chain's name. */
  readonly modelId: string;
  readonly supportedUrls: Record<string, RegExp[]> = {};
  readonly #supervisor: Supervisor;
  readonly #settings: BreakwaterModelSettings;

  constructor(supervisor: Supervisor, chain: string, settings: BreakwaterModelSettings = {}) {
    this.#supervisor = supervisor;
    this.modelId = chain;
    this.#settings = settings;
  }

  async doGenerate(options: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> {
    const mapped = mapCallOptions(options);
    const s = this.#settings;
    const maxTokens = mapped.maxTokens ?? s.maxTokens;
    const turn = await this.#supervisor.call({
      chain: this.modelId,
      messages: mapped.messages,
      ...(mapped.system !== undefined ? { system: mapped.system } : {}),
      ...(mapped.tools ? { tools: mapped.tools } : {}),
      ...(maxTokens !== undefined ? { maxTokens } : {}),
      ...(mapped.temperature !== undefined ? { temperature: mapped.temperature } : {}),
      ...(s.tier !== undefined ? { tier: s.tier } : {}),
      ...(s.maxWaitMs !== undefined ? { maxWaitMs: s.maxWaitMs } : {}),
      ...(s.maxAttempts !== undefined ? { maxAttempts: s.maxAttempts } : {}),
      ...(s.decisionTree !== undefined ? { decisionTree: s.decisionTree } : {}),
      ...(options.abortSignal ? { signal: options.abortSignal } : {}),
    });
    if (turn.outcome === 'cancelled') {
      // The AI SDK expects the abort's own reason, as fetch would throw it.
      throw options.abortSignal?.reason ?? new BreakwaterTurnFailedError(turn);
    }
    if (turn.outcome === 'failed') throw new BreakwaterTurnFailedError(turn);
    const content: LanguageModelV3Content[] = [];
    if (turn.answer.text) content.push({ type: 'text', text: turn.answer.text });
    for (const call of turn.toolCalls ?? [])
      content.push({
        type: 'tool-call',
        toolCallId: call.id,
        toolName: call.name,
        input: JSON.stringify(call.arguments),
      });
    return {
      content,
      finishReason: finishReasonOf(turn),
      usage: usageOf(turn),
      providerMetadata: { breakwater: metadataOf(turn) },
      response: {
        id: turn.turnId,
        timestamp: new Date(turn.finishedAt),
        ...(turn.model !== undefined ? { modelId: turn.model } : {}),
      },
      warnings: mapped.warnings,
    };
  }

  async doStream(options: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamResult> {
    const result = await this.doGenerate(options);
    const parts: LanguageModelV3StreamPart[] = [{ type: 'stream-start', warnings: result.warnings }];
    if (result.response) parts.push({ type: 'response-metadata', ...result.response });
    for (const [i, c] of result.content.entries()) {
      if (c.type === 'text') {
        const id = `text-${i}`;
        parts.push(
          { type: 'text-start', id },
          { type: 'text-delta', id, delta: c.text },
          { type: 'text-end', id },
        );
      } else if (c.type === 'tool-call') {
        parts.push(
          { type: 'tool-input-start', id: c.toolCallId, toolName: c.toolName },
          { type: 'tool-input-delta', id: c.toolCallId, delta: c.input },
          { type: 'tool-input-end', id: c.toolCallId },
          c,
        );
      }
    }
    parts.push({
      type: 'finish',
      usage: result.usage,
      finishReason: result.finishReason,
      ...(result.providerMetadata ? { providerMetadata: result.providerMetadata } : {}),
    });
    return {
      stream: new ReadableStream<LanguageModelV3StreamPart>({
        start(controller) {
          for (const p of parts) controller.enqueue(p);
          controller.close();
        },
      }),
    };
  }
}

function finishReasonOf(turn: Turn): LanguageModelV3FinishReason {
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

function usageOf(turn: Turn): LanguageModelV3Usage {
  return {
    inputTokens: {
      total: turn.usage.inputTokens,
      noCache: undefined,
      cacheRead: undefined,
      cacheWrite: undefined,
    },
    outputTokens: { total: turn.usage.outputTokens, text: undefined, reasoning: undefined },
  };
}

function metadataOf(turn: Turn): BreakwaterMetadata {
  return {
    outcome: turn.outcome,
    ...(turn.endpointId !== undefined ? { endpointId: turn.endpointId } : {}),
    ...(turn.model !== undefined ? { model: turn.model } : {}),
    degraded: turn.degraded,
    ...(turn.degradedReason !== undefined ? { degradedReason: turn.degradedReason } : {}),
    faults: turn.faults.map((f) => ({
      kind: f.kind,
      ...(f.endpointId !== undefined ? { endpointId: f.endpointId } : {}),
      ...(f.status !== undefined ? { status: f.status } : {}),
      message: f.message,
    })),
    attempts: turn.attempts,
    waitMs: turn.waitMs,
    turnId: turn.turnId,
  };
}
