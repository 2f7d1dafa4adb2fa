import type { EmulatorFlavor } from './emulator-types.ts';
import type { QuotaRejection } from './quota-windows.ts';
import type { ErrorSpec } from './wire-module.ts';
import type { WireRequest } from './wire-request.ts';

/**
 * Output-token caps the emulated servers enforce, with each provider's own refusal text, so an
 * absurd `max_tokens` is a 400 bad request (the fault no engine swap can fix), as it is upstream.
 * Ollama accepts any `num_predict`, so it has no cap.
 */
const MAX_OUTPUT_TOKENS: Record<EmulatorFlavor, number | null> = {
  anthropic: 128_000,
  openai: 128_000,
  gemini: 65_536,
  'gemini-compat': 65_536,
  vllm: 32_768,
  ollama: null,
};

/** The provider's 400 message when the request asks for too many (or too few) output tokens. */
export function outputTokenProblem(flavor: EmulatorFlavor, req: WireRequest): string | undefined {
  const n = req.maxTokens;
  if (!Number.isInteger(n) || n < 1) {
    if (flavor === 'anthropic') return 'max_tokens: Input should be greater than or equal to 1';
    if (flavor === 'gemini') return `The specified maxOutputTokens value ${n} is out of range.`;
    return `Invalid 'max_tokens': integer below minimum value. Expected a value >= 1, but got ${n} instead.`;
  }
  const cap = MAX_OUTPUT_TOKENS[flavor];
  if (cap === null || n <= cap) return undefined;
  switch (flavor) {
    case 'anthropic':
      return `max_tokens: ${n} > ${cap}, which is the maximum allowed number of output tokens for ${req.model}`;
    case 'gemini':
    case 'gemini-compat':
      return `The specified maxOutputTokens value ${n} is out of range. Valid range: [1, ${cap + 1})`;
    case 'vllm':
      return `This model's maximum context length is ${cap} tokens. However, you requested ${n + req.inputTokens} tokens (${req.inputTokens} in the messages, ${n} in the completion). Please reduce the length of the messages or completion.`;
    default:
      return `max_tokens is too large: ${n}. This model supports at most ${cap} completion tokens, whereas you provided ${n}.`;
  }
}

/** A quota's refusal as the provider's 429 says it: the error to render and the retry-after to send (real ms). */
export interface QuotaRefusal {
  readonly spec: Extract<ErrorSpec, { kind: 'rate_limit' }>;
  /** Absent: no retry-after header (OpenAI's "Request too large" names no wait: none would help). */
  readonly retryAfterMs?: number;
}

/**
 * The 429 for a call the quota refused. A call larger than the whole per-minute limit is not a rate limit that
 * passes: OpenAI (and the OpenAI-compatible wire) answers it "Request too large for <model> … Limit X, Requested Y",
 * type `tokens`, code `rate_limit_exceeded`, with no wait (provider-wire-facts §2: not retryable). The others
 * document nothing of their own for it, so they send their usual rate-limit 429, with the whole window as the wait
 * (nothing shorter lets the call in) instead of a "try again in 0s" that would be retried at once.
 *
 * @example
 * ```ts
 * const { spec, retryAfterMs } = quotaRefusal('openai', 'gpt-4o', rejection, (ms) => core.time.toReal(ms));
 * ```
 */
export function quotaRefusal(
  flavor: EmulatorFlavor,
  model: string,
  r: QuotaRejection,
  toReal: (emulatedMs: number) => number,
): QuotaRefusal {
  const retryAfterMs = toReal(r.retryAfterMs);
  const counts = { dimension: r.dimension, limit: r.limit, used: r.used, requested: r.requested || 1 };
  const openaiWire = flavor === 'openai' || flavor === 'vllm' || flavor === 'ollama';
  if (r.tooLarge && openaiWire)
    return {
      spec: {
        kind: 'rate_limit',
        model,
        ...counts,
        retryAfterMs: 0,
        message: `Request too large for ${model} in organization org-emulator on tokens per min (TPM): Limit ${r.limit}, Requested ${r.requested}. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.`,
      },
    };
  return { spec: { kind: 'rate_limit', model, ...counts, retryAfterMs }, retryAfterMs };
}
