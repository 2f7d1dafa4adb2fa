/**
 * The unified engine adapter's value types: one normalized request and one normalized result
 * that every provider (Anthropic, OpenAI, Gemini, OpenAI-compatible servers) maps to and from.
 */
import type { CallAbort } from './call-abort.ts';

/** Which wire protocol an endpoint speaks. */
export type ProviderKind = 'anthropic' | 'openai' | 'gemini' | 'openai-compatible';

/**
 * For `openai-compatible` endpoints: which server is behind the base URL. It only changes how
 * faults are read (Gemini's compat path wraps errors in an array; Ollama says "server busy").
 */
export type CompatFlavor = 'generic' | 'vllm' | 'ollama' | 'gemini-compat';

/** A JSON Schema object describing a tool's parameters. */
export type JsonSchema = { readonly [key: string]: unknown };

/** A tool the model may call. */
export interface ToolDefinition {
  readonly name: string;
  readonly description?: string;
  /** JSON Schema of the arguments object (`{ type: 'object', properties, required }`). */
  readonly parameters: JsonSchema;
}

/**
 * A tool call the model asked for, with its arguments already parsed from JSON.
 *
 * @example
 * ```ts
 * for (const call of turn.toolCalls ?? []) results.push(await tools[call.name](call.arguments));
 * ```
 */
export interface ToolCall {
  /** Provider's call id (Gemini has none on the wire: the adapter makes a stable one). */
  readonly id: string;
  readonly name: string;
  readonly arguments: Readonly<Record<string, unknown>>;
}

/**
 * One message of a conversation, provider-neutral.
 * - `user` / `assistant`: plain text turns.
 * - `tool_call`: the assistant asked for a tool (consecutive tool calls after an assistant
 *   message belong to that same assistant turn on the wire).
 * - `tool_result`: what the tool returned for the call with `toolCallId`.
 *
 * @example
 * ```ts
 * const messages: ChatMessage[] = [
 *   { role: 'user', content: 'EURUSD?' },
 *   { role: 'tool_call', call: { id: 'c1', name: 'fx_rate', arguments: { pair: 'EURUSD' } } },
 *   { role: 'tool_result', toolCallId: 'c1', toolName: 'fx_rate', content: '1.0842' },
 * ];
 * ```
 */
export type ChatMessage =
  | { readonly role: 'user'; readonly content: string }
  | { readonly role: 'assistant'; readonly content: string }
  | { readonly role: 'tool_call'; readonly call: ToolCall }
  | {
      readonly role: 'tool_result';
      readonly toolCallId: string;
      readonly toolName: string;
      readonly content: string;
      readonly isError?: boolean;
    };

/** A normalized request to one engine. */
export interface EngineRequest {
  /** System prompt (Anthropic `system`, OpenAI system message, Gemini `systemInstruction`). */
  readonly system?: string;
  readonly messages: readonly ChatMessage[];
  readonly tools?: readonly ToolDefinition[];
  /** Upper bound on output tokens. */
  readonly maxTokens: number;
  /** Sampling temperature; provider default when absent. */
  readonly temperature?: number;
  /** Cancels the call; a cancelled call fails with fault kind `cancelled`. */
  readonly signal?: AbortSignal;
  /**
   * The runtime's cancellation of its own calls, instead of `signal` (no `AbortController` per call), given only to
   * an engine that says it takes one ({@link Engine.takesCallAbort}). @internal
   */
  readonly abort?: CallAbort;
  /**
   * Identifies this logical call across retries and crashes. Sent upstream as the
   * `Idempotency-Key` header; the durable store memoizes results under it.
   */
  readonly idempotencyKey: string;
  /**
   * An assistant text the answer continues (a stream resumed on another endpoint after a fault): sent as the last
   * assistant message (Anthropic prefill; vLLM `continue_final_message`). The result's text is only what follows
   * it. Only for endpoints where {@link canContinuePrefix} is true. Default: none.
   */
  readonly prefill?: string;
}

/**
 * Receives a streamed call's content as it arrives (see {@link Engine.stream}).
 *
 * @example
 * ```ts
 * const sink: StreamSink = { text: (delta) => process.stdout.write(delta) };
 * ```
 */
export interface StreamSink {
  /** One text delta, in order. */
  text(delta: string): void;
}

/**
 * Why the model stopped.
 *
 * @example
 * ```ts
 * if (turn.stopReason === 'max_tokens') console.warn('answer cut at maxTokens');
 * ```
 */
export type StopReason = 'end_turn' | 'tool_use' | 'max_tokens' | 'refusal' | 'other';

/** One rate-limit dimension as the provider reported it. Absent fields were not reported. */
export interface RateLimitWindow {
  readonly limit?: number;
  readonly remaining?: number;
  /**
   * When this dimension is fully replenished, epoch ms on the engine's clock (the run's clock: a reset
   * instant from the wire is wall-clock and is moved onto it). At most `maxRetryAfterMs` ahead.
   */
  readonly resetAt?: number;
}

/** What the response headers said about the endpoint's quota. */
export interface RateLimitState {
  readonly requests?: RateLimitWindow;
  readonly tokens?: RateLimitWindow;
  /** Anthropic's input-tokens-per-minute dimension. */
  readonly inputTokens?: RateLimitWindow;
  /** Anthropic's output-tokens-per-minute dimension. */
  readonly outputTokens?: RateLimitWindow;
  /** From `retry-after-ms` / `retry-after`, when present. */
  readonly retryAfterMs?: number;
  /**
   * The longest wait these headers asked for (a reset or retry-after), when it was past the endpoint's
   * `maxRetryAfterMs` and cut to it: shown and logged, never silent.
   */
  readonly cappedFromMs?: number;
}

/**
 * Where a {@link Usage}'s counts come from:
 * - `reported`: both counts are the providers', whole;
 * - `partial`: some of it is: one count of a call was not reported (`null`), or some of a turn's calls reported and
 *   others did not (a stream cut on the primary, the backup's answer): the counts are the reported part, the rest
 *   estimated apart;
 * - `unknown`: no provider reported either count (a call cut after it was sent, a compatible server that sends none).
 *
 * @example
 * ```ts
 * const measured = (u: Usage) => u.source === 'reported';
 * ```
 */
export type UsageSource = 'reported' | 'partial' | 'unknown';

/**
 * Token usage of one call, or of a turn's calls together. A count is what the provider reported, or `null` when it
 * reported none: never a guess. breakwater's own estimate of an unreported count (characters ÷ 4) is kept apart in
 * `estimated`, for pacing (TPM accounting) and to be shown labelled as an estimate.
 *
 * @example
 * ```ts
 * const { inputTokens, outputTokens } = turn.usage;
 * const output = outputTokens ?? `unknown (≈${turn.usage.estimated?.outputTokens} estimated)`;
 * ```
 */
export interface Usage {
  /** Input tokens the providers reported (of a turn: summed over its calls); `null` when none reported them. */
  readonly inputTokens: number | null;
  /** Output tokens the providers reported (of a turn: summed over its calls); `null` when none reported them. */
  readonly outputTokens: number | null;
  /** Which of the counts the providers reported (derived from them: the flag a stored row or a span carries). */
  readonly source: UsageSource;
  /**
   * Present exactly when a count was not wholly reported: breakwater's estimate (characters ÷ 4), never measured, of
   * the part not reported (all of a `null` count; of a turn's count, the calls that did not report it). Only those
   * counts have one.
   */
  readonly estimated?: { readonly inputTokens?: number; readonly outputTokens?: number };
}

/**
 * Identity of an endpoint: provider + key + model. The key appears only as a fingerprint
 * (a short hash), never in plaintext, so descriptors are safe to log and persist.
 */
export interface EndpointDescriptor {
  /** The configured name, unique in a runtime (e.g. `primary-openai`). */
  readonly id: string;
  readonly provider: ProviderKind;
  readonly flavor?: CompatFlavor;
  readonly model: string;
  /** The keyed fingerprint of the key (HMAC under a process secret, 8 hex); `none` when the endpoint needs no key. */
  readonly keyFingerprint: string;
  readonly baseURL?: string;
}

/** The normalized result of a successful call. */
export interface EngineResult {
  readonly text: string;
  readonly toolCalls: readonly ToolCall[];
  readonly stopReason: StopReason;
  readonly usage: Usage;
  /** The endpoint that answered. */
  readonly endpoint: EndpointDescriptor;
  /** The model name the provider reported (may be more specific than the configured one). */
  readonly model: string;
  readonly requestId?: string;
  readonly rateLimit: RateLimitState;
  /** Wall time of the call, on the adapter's clock. */
  readonly latencyMs: number;
}

/**
 * One provider behind the unified interface. `call` resolves with a normalized result or rejects
 * with an `EngineFaultError` carrying a classified `Fault` — never with a raw SDK error.
 */
export interface Engine {
  readonly endpoint: EndpointDescriptor;
  /**
   * The engine reads a call's cancellation from `request.abort` (the adapter's engines do): the runtime then makes no
   * `AbortSignal` for the call. Any other engine gets `request.signal`. @internal
   */
  readonly takesCallAbort?: boolean;
  call(request: EngineRequest): Promise<EngineResult>;
  /**
   * The same call, streamed through the SDK's own streaming: text deltas reach `sink` as they come, and it
   * resolves with the same {@link EngineResult} (text, tool calls, stop reason and usage assembled) or rejects
   * with an `EngineFaultError`. The idle deadline applies between chunks; a stream that ends without the
   * provider's end marker is a `network` fault. Optional: an engine without it is called whole.
   */
  stream?(request: EngineRequest, sink: StreamSink): Promise<EngineResult>;
}

/**
 * Whether an endpoint can continue an assistant prefix ({@link EngineRequest.prefill}): Anthropic (documented
 * prefill) and vLLM (`continue_final_message`). OpenAI Chat Completions, Gemini, Ollama and other compatible
 * servers cannot: an assistant message there is a finished turn, so a stream broken on them restarts.
 *
 * @example
 * ```ts
 * canContinuePrefix(engine.endpoint); // true for anthropic
 * ```
 */
export function canContinuePrefix(endpoint: Pick<EndpointDescriptor, 'provider' | 'flavor'>): boolean {
  return (
    endpoint.provider === 'anthropic' ||
    (endpoint.provider === 'openai-compatible' && endpoint.flavor === 'vllm')
  );
}
