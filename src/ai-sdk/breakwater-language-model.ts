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
import type { DegradedAnswer } from '../core/turn.ts';
import type { DegradedContext } from '../runtime/agent-definition.ts';
import type { ToolCall } from '../core/engine-types.ts';
import type { CallOptions } from '../runtime/supervisor-types.ts';
import type { Supervisor } from '../runtime/supervisor-types.ts';
import type { Turn } from '../core/turn.ts';
import type { StreamEvent } from '../runtime/turn-stream.ts';
import { BreakwaterTurnFailedError } from './ai-sdk-errors.ts';
import { mapCallOptions } from './prompt-mapping.ts';
import { isWhole, usageSource } from '../core/token-usage.ts';

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
  /**
   * The turn's answer text. After a streamed restart `result.text` also holds the withdrawn text (AI SDK stream
   * parts cannot be taken back); this never does.
   */
  text: string;
  degraded: boolean;
  degradedReason?: string;
  /** Every fault met, in order: kind, endpoint, HTTP status and message. */
  faults: Array<{ kind: string; endpointId?: string; status?: number; message: string }>;
  /** Upstream calls made (retries and fallbacks included). */
  attempts: number;
  /** Time spent waiting for a token or a cooldown, ms. */
  waitMs: number;
  turnId: string;
  /**
   * Whether the providers reported the turn's token counts (`reported`, `partial`, `unknown`; `usage` has only the
   * wholly reported ones), the reported part of a count some calls did not report, and breakwater's estimates
   * (characters ÷ 4) of what was not reported: estimates, never measured.
   */
  usage: {
    source: string;
    reportedInputTokens?: number;
    reportedOutputTokens?: number;
    estimatedInputTokens?: number;
    estimatedOutputTokens?: number;
  };
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

/** Turns breakwater stream events into AI SDK stream parts (text parts by id, whitespace held back). */
class StreamParts {
  #textId: string | undefined;
  #n = 0;
  #held = '';
  #shown = 0;

  on(e: StreamEvent): LanguageModelV3StreamPart[] {
    const out: LanguageModelV3StreamPart[] = [];
    if (e.type === 'endpoint') {
      if (e.mode === 'restart' && e.withdrawn > 0 && this.#textId) {
        out.push(...this.#withdrawText());
      } else if (e.withdrawn > 0) {
        // A continuation drops the partial answer's trailing whitespace: it was held back, never shown.
        this.#held = this.#held.slice(0, Math.max(0, this.#held.length - e.withdrawn));
      }
    } else if (e.type === 'text') {
      if (!this.#textId) {
        this.#textId = `text-${this.#n++}`;
        out.push({ type: 'text-start', id: this.#textId });
      }
      const all = this.#held + e.text;
      const visible = all.trimEnd();
      this.#held = all.slice(visible.length);
      if (visible) {
        this.#shown += visible.length;
        out.push({ type: 'text-delta', id: this.#textId, delta: visible });
      }
    } else if (e.type === 'step') {
      out.push(...this.#closeText());
    }
    return out;
  }

  finish(turn: Turn): LanguageModelV3StreamPart[] {
    // A degraded turn's text is the degraded answer, not the partial one streamed before the chain gave up: that
    // part is withdrawn (as after a restart), so nothing glues the partial text onto the summary.
    const out = turn.degraded ? this.#withdrawText() : this.#closeText();
    // A degraded answer never streamed: it is the turn's text, whole.
    if (turn.degraded && turn.answer.text) {
      const id = `text-${this.#n++}`;
      out.push(
        { type: 'text-start', id },
        { type: 'text-delta', id, delta: turn.answer.text },
        { type: 'text-end', id },
      );
    }
    for (const call of turn.toolCalls ?? []) {
      const part = toolCallPart(call);
      out.push(
        { type: 'tool-input-start', id: part.toolCallId, toolName: part.toolName },
        { type: 'tool-input-delta', id: part.toolCallId, delta: part.input },
        { type: 'tool-input-end', id: part.toolCallId },
        part,
      );
    }
    out.push(
      { type: 'response-metadata', ...responseOf(turn) },
      {
        type: 'finish',
        usage: usageOf(turn),
        finishReason: finishReasonOf(turn),
        providerMetadata: { breakwater: metadataOf(turn) },
      },
    );
    return out;
  }

  /** Closes the open text part as withdrawn (its held-back whitespace dropped): it is not part of the answer. */
  #withdrawText(): LanguageModelV3StreamPart[] {
    if (!this.#textId) return [];
    const out: LanguageModelV3StreamPart[] = [
      {
        type: 'text-end',
        id: this.#textId,
        providerMetadata: { breakwater: { withdrawn: true, chars: this.#shown } },
      },
    ];
    this.#textId = undefined;
    this.#held = '';
    this.#shown = 0;
    return out;
  }

  #closeText(): LanguageModelV3StreamPart[] {
    if (!this.#textId) return [];
    const out: LanguageModelV3StreamPart[] = [];
    if (this.#held) out.push({ type: 'text-delta', id: this.#textId, delta: this.#held });
    out.push({ type: 'text-end', id: this.#textId });
    this.#textId = undefined;
    this.#held = '';
    this.#shown = 0;
    return out;
  }
}

/** A cancelled turn throws the abort's own reason (as fetch would); a failed one a BreakwaterTurnFailedError. */
function throwIfUnanswered(turn: Turn, options: LanguageModelV3CallOptions): void {
  if (turn.outcome === 'cancelled') throw options.abortSignal?.reason ?? new BreakwaterTurnFailedError(turn);
  if (turn.outcome === 'failed') throw new BreakwaterTurnFailedError(turn);
}

function toolCallPart(call: ToolCall): Extract<LanguageModelV3Content, { type: 'tool-call' }> {
  return {
    type: 'tool-call',
    toolCallId: call.id,
    toolName: call.name,
    input: JSON.stringify(call.arguments),
  };
}

function responseOf(turn: Turn) {
  return {
    id: turn.turnId,
    timestamp: new Date(turn.finishedAt),
    ...(turn.model !== undefined ? { modelId: turn.model } : {}),
  };
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

/**
 * The turn's usage as the V3 spec has it: a count the providers did not wholly report is `undefined` (the spec's "not
 * available"), never 0, a part or an estimate; those are in `providerMetadata.breakwater.usage`.
 */
function usageOf(turn: Turn): LanguageModelV3Usage {
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

/** Whether the providers reported the turn's counts, the reported part of one not wholly reported, and the estimate. */
function usageMetadataOf(turn: Turn): BreakwaterMetadata['usage'] {
  const u = turn.usage;
  const partOf = (n: number | null, whole: boolean) => (n !== null && !whole ? n : undefined);
  const reportedIn = partOf(u.inputTokens, isWhole(u, 'inputTokens'));
  const reportedOut = partOf(u.outputTokens, isWhole(u, 'outputTokens'));
  return {
    source: usageSource(u),
    ...(reportedIn !== undefined ? { reportedInputTokens: reportedIn } : {}),
    ...(reportedOut !== undefined ? { reportedOutputTokens: reportedOut } : {}),
    ...(u.estimated?.inputTokens !== undefined ? { estimatedInputTokens: u.estimated.inputTokens } : {}),
    ...(u.estimated?.outputTokens !== undefined ? { estimatedOutputTokens: u.estimated.outputTokens } : {}),
  };
}

function metadataOf(turn: Turn): BreakwaterMetadata {
  return {
    outcome: turn.outcome,
    ...(turn.endpointId !== undefined ? { endpointId: turn.endpointId } : {}),
    ...(turn.model !== undefined ? { model: turn.model } : {}),
    text: turn.answer.text,
    degraded: turn.degraded,
    usage: usageMetadataOf(turn),
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
