import Anthropic from '@anthropic-ai/sdk';
import type { Clock } from '../clock/clock.ts';
import type { CallCredential } from './call-credential.ts';
import { effectiveBaseURL, endpointCredential, type ParsedEndpointConfig } from './endpoint-config.ts';
import {
  countsOf,
  type EngineContext,
  idempotencyHeaders,
  messagesWithPrefill,
  parseToolArguments,
  type ProviderOutcome,
  runEngineCall,
  StreamCutError,
  streamFailure,
} from './engine-call.ts';
import type {
  ChatMessage,
  EndpointDescriptor,
  Engine,
  EngineRequest,
  StopReason,
  StreamSink,
  ToolCall,
} from '../core/engine-types.ts';
import { sdkTimeoutMs } from './sdk-timeout.ts';
import { timedFetch } from './timed-fetch.ts';

type Block = Anthropic.ContentBlockParam;
type Turn = { role: 'user' | 'assistant'; content: Block[] };

/**
 * Maps neutral messages to Anthropic turns: consecutive same-side messages merge into one turn, so
 * an assistant text and the tool calls after it are one assistant turn of text + `tool_use` blocks,
 * and tool results are `tool_result` blocks of one user turn.
 */
export function toAnthropicMessages(messages: readonly ChatMessage[]): Anthropic.MessageParam[] {
  const turns: Turn[] = [];
  const push = (role: Turn['role'], block: Block) => {
    const last = turns[turns.length - 1];
    if (last && last.role === role) last.content.push(block);
    else turns.push({ role, content: [block] });
  };
  for (const m of messages) {
    switch (m.role) {
      case 'user':
        push('user', { type: 'text', text: m.content });
        break;
      case 'assistant':
        // An empty text block is refused by the API; the turn may still carry tool_use blocks.
        if (m.content) push('assistant', { type: 'text', text: m.content });
        else if (turns[turns.length - 1]?.role !== 'assistant')
          turns.push({ role: 'assistant', content: [] });
        break;
      case 'tool_call':
        push('assistant', {
          type: 'tool_use',
          id: m.call.id,
          name: m.call.name,
          input: m.call.arguments as Record<string, unknown>,
        });
        break;
      case 'tool_result':
        push('user', {
          type: 'tool_result',
          tool_use_id: m.toolCallId,
          content: m.content,
          ...(m.isError ? { is_error: true } : {}),
        });
        break;
    }
  }
  return turns
    .filter((t) => t.content.length > 0)
    .map((t) => {
      const only = t.content[0];
      // A lone text block goes as a plain string, the most widely accepted shape.
      if (t.content.length === 1 && only?.type === 'text') return { role: t.role, content: only.text };
      return { role: t.role, content: t.content };
    });
}

/** Builds the Messages API body of a neutral request (its prefill, if any, as the last assistant message). */
export function toAnthropicBody(
  model: string,
  request: EngineRequest,
): Anthropic.MessageCreateParamsNonStreaming {
  return {
    model,
    max_tokens: request.maxTokens,
    messages: toAnthropicMessages(messagesWithPrefill(request)),
    ...(request.system ? { system: request.system } : {}),
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    ...(request.tools?.length
      ? {
          tools: request.tools.map((t) => ({
            name: t.name,
            ...(t.description ? { description: t.description } : {}),
            input_schema: t.parameters as Anthropic.Tool.InputSchema,
          })),
        }
      : {}),
  };
}

function mapStopReason(reason: string | null | undefined): StopReason {
  switch (reason) {
    case 'end_turn':
    case 'stop_sequence':
      return 'end_turn';
    case 'tool_use':
      return 'tool_use';
    case 'max_tokens':
    case 'model_context_window_exceeded':
      return 'max_tokens';
    case 'refusal':
      return 'refusal';
    default:
      return 'other';
  }
}

/** Reads text, tool calls, stop reason and usage from a Messages API response. */
export function fromAnthropicMessage(message: Anthropic.Message): ProviderOutcome {
  let text = '';
  const toolCalls: ToolCall[] = [];
  for (const block of message.content) {
    if (block.type === 'text') text += block.text;
    else if (block.type === 'tool_use') {
      const input = block.input;
      toolCalls.push({
        id: block.id,
        name: block.name,
        arguments: input && typeof input === 'object' ? (input as Record<string, unknown>) : {},
      });
    }
  }
  const u = message.usage;
  return {
    text,
    toolCalls,
    stopReason: mapStopReason(message.stop_reason),
    // Cached prompt tokens are still input tokens of this call. A body without usage (a proxy) leaves both unknown.
    usage: countsOf(
      typeof u?.input_tokens === 'number'
        ? u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0)
        : undefined,
      u?.output_tokens,
    ),
    model: message.model,
  };
}

/**
 * Reads a Messages API event stream: text deltas go to `sink` as they come; tool_use blocks are assembled from
 * their `input_json_delta`s, usage from `message_start` and the cumulative `message_delta`. A stream that ends or
 * breaks before `message_delta` brought the stop reason was cut; after it, only `message_stop` is missing and the
 * answer is complete.
 */
export async function readAnthropicStream(
  events: AsyncIterable<Anthropic.RawMessageStreamEvent>,
  sink: StreamSink,
  fallbackModel: string,
  touch: () => void = () => {},
  signal?: { readonly aborted: boolean },
): Promise<ProviderOutcome> {
  let text = '';
  let model = fallbackModel;
  let stop: string | null | undefined;
  // `message_start` reports the input (its `output_tokens` is a placeholder); `message_delta` the final output.
  let input: number | undefined;
  let output: number | undefined;
  let ended = false;
  const tools = new Map<number, { id: string; name: string; json: string }>();
  try {
    for await (const ev of events) {
      touch();
      switch (ev.type) {
        case 'content_block_delta':
          if (ev.delta.type === 'text_delta') {
            text += ev.delta.text;
            sink.text(ev.delta.text);
          } else if (ev.delta.type === 'input_json_delta') {
            const t = tools.get(ev.index);
            if (t) t.json += ev.delta.partial_json;
          }
          break;
        case 'content_block_start':
          if (ev.content_block.type === 'tool_use')
            tools.set(ev.index, { id: ev.content_block.id, name: ev.content_block.name, json: '' });
          break;
        case 'message_start': {
          model = ev.message.model || fallbackModel;
          const u = ev.message.usage;
          if (typeof u?.input_tokens === 'number')
            input = u.input_tokens + (u.cache_creation_input_tokens ?? 0) + (u.cache_read_input_tokens ?? 0);
          break;
        }
        case 'message_delta':
          stop = ev.delta.stop_reason;
          if (ev.usage) {
            if (typeof ev.usage.output_tokens === 'number') output = ev.usage.output_tokens;
            // The delta's input count is cumulative too (cache tokens included when it sends them).
            if (typeof ev.usage.input_tokens === 'number')
              input =
                ev.usage.input_tokens +
                (ev.usage.cache_creation_input_tokens ?? 0) +
                (ev.usage.cache_read_input_tokens ?? 0);
          }
          break;
        case 'message_stop':
          ended = true;
          break;
      }
    }
  } catch (err) {
    // `message_delta` with a stop reason comes after every content block ended: only `message_stop` (no content)
    // is missing, the answer is complete. Re-asking it as a continuation would add text to a finished answer.
    // The caller's abort still cancels.
    if (stop == null || signal?.aborted) throw streamFailure(err);
  }
  if (!ended && stop == null) throw new StreamCutError('no message_stop');
  const toolCalls: ToolCall[] = [];
  for (const t of tools.values())
    toolCalls.push({ id: t.id, name: t.name, arguments: parseToolArguments(t.json) });
  return {
    text,
    toolCalls,
    stopReason: mapStopReason(stop),
    // A proxy that strips usage: the answer is still good; what was not reported stays unknown.
    usage: countsOf(input, output),
    model,
  };
}

/**
 * An {@link Engine} over the Anthropic Messages API (`@anthropic-ai/sdk`). One client per engine,
 * SDK retries off (breakwater owns retries), deadlines from {@link timedFetch}. The client holds the
 * credential's marker, never the key: `credentialFetch` puts the key on the wire (default credential:
 * the config's key, sealed).
 *
 * @example
 * ```ts
 * const engine = createAnthropicEngine(parseEndpointConfig({ id: 'a', provider: 'anthropic',
 *   model: 'claude-sonnet-4-5', apiKeyEnv: 'ANTHROPIC_API_KEY' }), describeEndpoint(cfg), systemClock);
 * ```
 */
export function createAnthropicEngine(
  config: ParsedEndpointConfig,
  endpoint: EndpointDescriptor,
  clock: Clock,
  wallNow: () => number = Date.now,
  credential: CallCredential | undefined = endpointCredential(config),
  wireScale = 1,
  quotaDayNow?: () => number,
): Engine {
  const client = new Anthropic({
    apiKey: credential?.marker ?? null,
    baseURL: effectiveBaseURL(config) ?? null,
    maxRetries: 0,
    // Our own deadlines govern; the SDK's timer must never fire first (and an explicit timeout
    // also stops the SDK from refusing large non-streaming max_tokens client-side).
    timeout: sdkTimeoutMs(config),
    fetch: timedFetch,
    openTelemetry: false,
  });
  const ctx: EngineContext = {
    config,
    endpoint,
    clock,
    wallNow,
    credential,
    wireScale,
    ...(quotaDayNow ? { quotaDayNow } : {}),
  };
  return Object.freeze({
    endpoint,
    // Cancelled through `request.abort` (timedFetch listens to it): the runtime makes no AbortSignal per call.
    takesCallAbort: true,
    call: (request: EngineRequest) =>
      runEngineCall(ctx, request, async () => {
        const message = await client.messages.create(toAnthropicBody(config.model, request), {
          headers: idempotencyHeaders(request),
          ...(request.signal ? { signal: request.signal } : {}),
        });
        return fromAnthropicMessage(message);
      }),
    stream: (request: EngineRequest, sink: StreamSink) =>
      runEngineCall(
        ctx,
        request,
        async (touch) => {
          const events = await client.messages.create(
            { ...toAnthropicBody(config.model, request), stream: true },
            {
              headers: idempotencyHeaders(request),
              ...(request.signal ? { signal: request.signal } : {}),
            },
          );
          return readAnthropicStream(events, sink, config.model, touch, request.abort ?? request.signal);
        },
        true,
      ),
  });
}
