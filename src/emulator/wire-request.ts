/**
 * The provider-neutral view of an incoming call that every wire module parses into, and the
 * answer the generator produces for it. Internal to the emulator.
 */

/** One turn, flattened. */
export type WireMessage =
  | { role: 'user' | 'assistant'; text: string }
  | { role: 'tool_call'; id: string; name: string; args: unknown }
  | { role: 'tool_result'; id: string; name: string; text: string };

export interface WireTool {
  name: string;
  parameters: Record<string, unknown>;
}

export interface WireRequest {
  model: string;
  system: string;
  messages: WireMessage[];
  tools: WireTool[];
  maxTokens: number;
  stream: boolean;
  /** OpenAI `stream_options.include_usage`. */
  includeUsage: boolean;
  /** ceil(chars/4) of all text in the request (system, messages, tool JSON). */
  inputTokens: number;
  /**
   * An assistant text the answer must continue (Anthropic: a last `assistant` message; vLLM: the same with
   * `continue_final_message: true`). It is not in `messages`; the answer holds only what follows it.
   */
  prefill?: string;
}

export interface GeneratedToolCall {
  id: string;
  name: string;
  args: Record<string, unknown>;
}

export interface GeneratedAnswer {
  text: string;
  toolCall?: GeneratedToolCall;
  stopReason: 'end_turn' | 'tool_use' | 'max_tokens';
  inputTokens: number;
  outputTokens: number;
}

/** A request the emulator cannot parse: answered with the provider's 400. */
export class WireRequestError extends Error {
  readonly status: number;
  constructor(message: string, status = 400) {
    super(message);
    this.status = status;
  }
}

/** ceil(chars/4): the emulator's token estimate. */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / 4);
}

/** Sums the text of a request for the token estimate. */
export function requestText(
  system: string,
  messages: readonly WireMessage[],
  tools: readonly WireTool[],
): string {
  let out = system;
  for (const m of messages) {
    if (m.role === 'tool_call') out += m.name + JSON.stringify(m.args ?? {});
    else out += m.text;
  }
  if (tools.length > 0) out += JSON.stringify(tools);
  return out;
}

/** Coerces message content (a string, or a list of text-bearing parts) to text. */
export function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  if (Array.isArray(content)) {
    return content
      .map((p) => {
        if (typeof p === 'string') return p;
        if (p && typeof p === 'object') {
          const o = p as Record<string, unknown>;
          if (typeof o.text === 'string') return o.text;
          if ('content' in o) return contentText(o.content);
        }
        return '';
      })
      .join('');
  }
  if (content === null || content === undefined) return '';
  return JSON.stringify(content);
}
