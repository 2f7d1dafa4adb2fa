import type { EmulatorFlavor } from './emulator-types.ts';
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
