import type {
  LanguageModelV3,
  LanguageModelV3CallOptions,
  LanguageModelV3Content,
  LanguageModelV3GenerateResult,
  LanguageModelV3StreamPart,
  LanguageModelV3StreamResult,
} from '@ai-sdk/provider';
import type { DegradedAnswer } from '../core/turn.ts';
import type { DegradedContext } from '../runtime/agent-definition.ts';
import type { CallOptions } from '../runtime/supervisor-types.ts';
import type { Supervisor } from '../runtime/supervisor-types.ts';
import type { StreamEvent } from '../runtime/turn-stream.ts';
import { metadataOf } from './breakwater-metadata.ts';
import { mapCallOptions } from './prompt-mapping.ts';
import { finishReasonOf, responseOf, throwIfUnanswered, toolCallPart, usageOf } from './result-mapping.ts';
import { StreamParts } from './stream-parts.ts';

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
 * A breakwater chain as an AI SDK `LanguageModelV3`: every `doGenerate` is one `supervisor.call`, every `doStream`
 * one `supervisor.stream` (tokens, breakers, cooldowns, fallback along the chain, the degraded layer). Tools are offered to the model
 * and their calls handed back to the AI SDK, which runs them and calls again.
 *
 * `doStream` is `supervisor.stream`: text deltas as they come; a stream broken mid-way continues on the next
 * endpoint (see `doStream` for how a restart shows).
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

  /** The one-off call of one AI SDK call. */
  #callOptions(options: LanguageModelV3CallOptions, mapped: ReturnType<typeof mapCallOptions>): CallOptions {
    const s = this.#settings;
    const maxTokens = mapped.maxTokens ?? s.maxTokens;
    return {
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
    };
  }

  async doGenerate(options: LanguageModelV3CallOptions): Promise<LanguageModelV3GenerateResult> {
    const mapped = mapCallOptions(options);
    const turn = await this.#supervisor.call(this.#callOptions(options, mapped));
    throwIfUnanswered(turn, options);
    const content: LanguageModelV3Content[] = [];
    if (turn.answer.text) content.push({ type: 'text', text: turn.answer.text });
    for (const call of turn.toolCalls ?? []) content.push(toolCallPart(call));
    return {
      content,
      finishReason: finishReasonOf(turn),
      usage: usageOf(turn),
      providerMetadata: { breakwater: metadataOf(turn) },
      response: responseOf(turn),
      warnings: mapped.warnings,
    };
  }

  /**
   * Streams through `supervisor.stream`: text deltas as they come from the endpoint answering. A continuation
   * (the partial answer continued on another endpoint) is seamless; trailing whitespace is held back until more
   * text follows, since a continuation may drop it. AI SDK stream parts cannot take text back: after a restart
   * (an endpoint that cannot continue a prefix), or when the turn ends degraded after partial text, the withdrawn
   * text part is closed with `providerMetadata.breakwater.withdrawn: true` and the answer follows in a new text
   * part. `result.text` then holds both (the AI SDK joins every text part); the answer alone is
   * `providerMetadata.breakwater.text`, and a withdrawn part resent in a later prompt is dropped, never sent
   * upstream again.
   */
  async doStream(options: LanguageModelV3CallOptions): Promise<LanguageModelV3StreamResult> {
    const mapped = mapCallOptions(options);
    const stream = this.#supervisor.stream(this.#callOptions(options, mapped));
    const iterator = stream[Symbol.asyncIterator]();
    const parts = new StreamParts();
    let started = false;
    return {
      stream: new ReadableStream<LanguageModelV3StreamPart>({
        async pull(controller) {
          if (!started) {
            started = true;
            controller.enqueue({ type: 'stream-start', warnings: mapped.warnings });
          }
          // One event per pull, enqueuing what it gives (zero or more parts).
          for (;;) {
            let next: IteratorResult<StreamEvent>;
            try {
              next = await iterator.next();
            } catch (e) {
              controller.error(e);
              return;
            }
            if (next.done) {
              controller.close();
              return;
            }
            const e = next.value;
            if (e.type === 'done') {
              try {
                throwIfUnanswered(e.turn, options);
              } catch (err) {
                controller.error(err);
                return;
              }
              for (const p of parts.finish(e.turn)) controller.enqueue(p);
              controller.close();
              return;
            }
            const out = parts.on(e);
            if (out.length > 0) {
              for (const p of out) controller.enqueue(p);
              return;
            }
          }
        },
        cancel() {
          stream.cancel();
        },
      }),
    };
  }
}
