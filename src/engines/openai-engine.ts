import OpenAI from 'openai';
import type {
  ChatCompletion,
  ChatCompletionChunk,
  ChatCompletionAssistantMessageParam,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessageParam,
} from 'openai/resources/chat/completions';
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
  serializeToolArguments,
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
import { type TimedFetchOptions, timedFetch } from './timed-fetch.ts';

/** The SDK's type of a request's `fetchOptions` (ours carry only a symbol key, which its type cannot name). */
type SdkFetchOptions = NonNullable<
  NonNullable<Parameters<OpenAI['chat']['completions']['create']>[1]>['fetchOptions']
>;
const sdkFetchOptions = (o: TimedFetchOptions): SdkFetchOptions => o as unknown as SdkFetchOptions;

/**
 * Maps neutral messages to Chat Completions messages: tool calls join the assistant message right
 * before them (`tool_calls`), each tool result is its own `role: tool` message.
 */
export function toOpenAIMessages(
  system: string | undefined,
  messages: readonly ChatMessage[],
): ChatCompletionMessageParam[] {
  const out: ChatCompletionMessageParam[] = [];
  if (system) out.push({ role: 'system', content: system });
  let open: ChatCompletionAssistantMessageParam | undefined;
  for (const m of messages) {
    if (m.role === 'tool_call') {
      if (!open) {
        open = { role: 'assistant', content: null };
        out.push(open);
      }
      if (!open.tool_calls) open.tool_calls = [];
      open.tool_calls.push({
        id: m.call.id,
        type: 'function',
        function: { name: m.call.name, arguments: serializeToolArguments(m.call.arguments) },
      });
      continue;
    }
    open = undefined;
    if (m.role === 'assistant') {
      open = { role: 'assistant', content: m.content };
      out.push(open);
    } else if (m.role === 'user') {
      out.push({ role: 'user', content: m.content });
    } else {
      out.push({ role: 'tool', tool_call_id: m.toolCallId, content: m.content });
    }
  }
  return out;
}

/**
 * Builds the Chat Completions body. OpenAI itself gets `max_completion_tokens` (its reasoning models
 * refuse `max_tokens`); compatible servers get `max_tokens`, which all of them understand.
 */
export function toOpenAIBody(
  model: string,
  request: EngineRequest,
  compatible: boolean,
): ChatCompletionCreateParamsNonStreaming {
  return {
    model,
    messages: toOpenAIMessages(request.system, messagesWithPrefill(request)),
    ...(compatible ? { max_tokens: request.maxTokens } : { max_completion_tokens: request.maxTokens }),
    ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
    ...(request.tools?.length
      ? {
          tools: request.tools.map((t) => ({
            type: 'function' as const,
            function: {
              name: t.name,
              ...(t.description ? { description: t.description } : {}),
              parameters: t.parameters as Record<string, unknown>,
            },
          })),
        }
      : {}),
  };
}

function mapFinishReason(reason: string | null | undefined, refused: boolean): StopReason {
  if (refused) return 'refusal';
  switch (reason) {
    case 'stop':
      return 'end_turn';
    case 'tool_calls':
    case 'function_call':
      return 'tool_use';
    case 'length':
      return 'max_tokens';
    case 'content_filter':
      return 'refusal';
    default:
      return 'other';
  }
}

/** Reads text, parsed tool calls, stop reason and usage from a chat completion. */
export function fromChatCompletion(completion: ChatCompletion, fallbackModel: string): ProviderOutcome {
  const choice = completion.choices?.[0];
  const message = choice?.message;
  const toolCalls: ToolCall[] = [];
  for (const tc of message?.tool_calls ?? []) {
    if (tc.type !== 'function') continue;
    toolCalls.push({
      id: tc.id,
      name: tc.function.name,
      arguments: parseToolArguments(tc.function.arguments),
    });
  }
  const refusal = typeof message?.refusal === 'string' && message.refusal.length > 0;
  return {
    text: message?.content ?? (refusal ? (message?.refusal ?? '') : ''),
    toolCalls,
    stopReason: mapFinishReason(choice?.finish_reason, refusal),
    // A compatible server may send no usage at all: the counts stay absent (unknown), never 0.
    usage: countsOf(completion.usage?.prompt_tokens, completion.usage?.completion_tokens),
    model: completion.model || fallbackModel,
  };
}

/**
 * Reads a Chat Completions chunk stream (`stream_options.include_usage`): content deltas go to `sink`; tool calls
 * are assembled by `index` (the first fragment carries id and name, later ones only arguments); usage comes from
 * the last chunk (`choices: []`). A stream without any `finish_reason` was cut; one whose usage chunk is missing
 * (a compatible server, a proxy) is complete, its counts unknown.
 */
export async function readChatCompletionStream(
  chunks: AsyncIterable<ChatCompletionChunk>,
  sink: StreamSink,
  fallbackModel: string,
  touch: () => void = () => {},
): Promise<ProviderOutcome> {
  let text = '';
  let refusal = '';
  let model = fallbackModel;
  let finish: string | null | undefined;
  let usage: ChatCompletionChunk['usage'];
  const tools: { id: string; name: string; args: string }[] = [];
  try {
    for await (const chunk of chunks) {
      touch();
      const choice = chunk.choices?.[0];
      if (choice) {
        const delta = choice.delta;
        if (delta?.content) {
          text += delta.content;
          sink.text(delta.content);
        }
        if (delta?.refusal) refusal += delta.refusal;
        if (delta?.tool_calls) {
          for (const tc of delta.tool_calls) {
            let t = tools[tc.index];
            if (!t) {
              t = { id: '', name: '', args: '' };
              tools[tc.index] = t;
            }
            if (tc.id) t.id = tc.id;
            if (tc.function?.name) t.name += tc.function.name;
            if (tc.function?.arguments) t.args += tc.function.arguments;
          }
        }
        if (choice.finish_reason) finish = choice.finish_reason;
      }
      if (chunk.usage) usage = chunk.usage;
      if (chunk.model) model = chunk.model;
    }
  } catch (err) {
    throw streamFailure(err);
  }
  if (!finish) throw new StreamCutError('no finish_reason');
  const toolCalls: ToolCall[] = [];
  for (const t of tools)
    if (t) toolCalls.push({ id: t.id, name: t.name, arguments: parseToolArguments(t.args) });
  const refused = refusal.length > 0;
  return {
    text: text || (refused ? refusal : ''),
    toolCalls,
    stopReason: mapFinishReason(finish, refused),
    // No include_usage chunk (a compatible server, a proxy, a stream cut after the finish): the answer is complete,
    // its counts unknown; the engine estimates them apart.
    usage: countsOf(usage?.prompt_tokens, usage?.completion_tokens),
    model: model || fallbackModel,
  };
}

/**
 * An {@link Engine} over OpenAI Chat Completions (`openai`), also for every OpenAI-compatible
 * server (vLLM, Ollama, Gemini's compat path) through `baseURL`. One client per engine, SDK
 * retries off, deadlines from {@link timedFetch}. The client holds the credential's marker, never the
 * key: `credentialFetch` puts the key on the wire (default credential: the config's key, sealed).
 *
 * @example
 * ```ts
 * const cfg = parseEndpointConfig({ id: 'local', provider: 'openai-compatible', flavor: 'ollama', model: 'llama3.1' });
 * const engine = createOpenAIEngine(cfg, describeEndpoint(cfg), systemClock);
 * ```
 */
export function createOpenAIEngine(
  config: ParsedEndpointConfig,
  endpoint: EndpointDescriptor,
  clock: Clock,
  wallNow: () => number = Date.now,
  credential: CallCredential | undefined = endpointCredential(config),
  wireScale = 1,
  quotaDayNow?: () => number,
): Engine {
  const compatible = config.provider === 'openai-compatible';
  const client = new OpenAI({
    // Local servers need no key, but the SDK refuses to start without one.
    apiKey: credential?.marker ?? 'no-key',
    baseURL: effectiveBaseURL(config) ?? null,
    // Never let OPENAI_ORG_ID / OPENAI_PROJECT_ID from the environment leak into requests.
    organization: null,
    project: null,
    maxRetries: 0,
    timeout: sdkTimeoutMs(config),
    fetch: timedFetch,
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
    // The SDK hands a request's `fetchOptions` to `timedFetch` as they are: the call travels in them.
    call: (request: EngineRequest) =>
      runEngineCall(
        ctx,
        request,
        async (_touch, fetchOptions) => {
          const completion = await client.chat.completions.create(
            toOpenAIBody(config.model, request, compatible),
            {
              headers: idempotencyHeaders(request),
              fetchOptions: sdkFetchOptions(fetchOptions),
              ...(request.signal ? { signal: request.signal } : {}),
            },
          );
          return fromChatCompletion(completion, config.model);
        },
        false,
        true,
      ),
    stream: (request: EngineRequest, sink: StreamSink) =>
      runEngineCall(
        ctx,
        request,
        async (touch, fetchOptions) => {
          const body = {
            ...toOpenAIBody(config.model, request, compatible),
            stream: true as const,
            stream_options: { include_usage: true },
            // vLLM continues the last assistant message instead of answering after it.
            ...(request.prefill ? { continue_final_message: true, add_generation_prompt: false } : {}),
          };
          const chunks = await client.chat.completions.create(body, {
            headers: idempotencyHeaders(request),
            fetchOptions: sdkFetchOptions(fetchOptions),
            ...(request.signal ? { signal: request.signal } : {}),
          });
          return readChatCompletionStream(chunks, sink, config.model, touch);
        },
        true,
        true,
      ),
  });
}
