import {
  type Content,
  type FunctionDeclaration,
  type GenerateContentParameters,
  type GenerateContentResponse,
  GoogleGenAI,
  type Part,
} from '@google/genai';
import type { Clock } from '../clock/clock.ts';
import type { CallCredential } from './call-credential.ts';
import { effectiveBaseURL, endpointCredential, type ParsedEndpointConfig } from './endpoint-config.ts';
import {
  countsOf,
  type EngineContext,
  idempotencyHeaders,
  type ProviderOutcome,
  type ReportedCounts,
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
import { timedFetch } from './timed-fetch.ts';

/**
 * Maps neutral messages to Gemini contents. Consecutive same-side messages merge into one turn:
 * an assistant text and its tool calls are one `model` turn of text + `functionCall` parts, tool
 * results are `functionResponse` parts of one `user` turn. Gemini has no call ids on the wire, so
 * results are matched back by tool name.
 */
export function toGeminiContents(messages: readonly ChatMessage[]): Content[] {
  const turns: Content[] = [];
  const push = (role: 'user' | 'model', part: Part) => {
    const last = turns[turns.length - 1];
    if (last && last.role === role) last.parts!.push(part);
    else turns.push({ role, parts: [part] });
  };
  for (const m of messages) {
    switch (m.role) {
      case 'user':
        push('user', { text: m.content });
        break;
      case 'assistant':
        if (m.content) push('model', { text: m.content });
        else if (turns[turns.length - 1]?.role !== 'model') turns.push({ role: 'model', parts: [] });
        break;
      case 'tool_call':
        push('model', { functionCall: { name: m.call.name, args: { ...m.call.arguments } } });
        break;
      case 'tool_result':
        push('user', {
          functionResponse: {
            name: m.toolName,
            // Gemini's convention: `output` for a result, `error` for a failure.
            response: m.isError ? { error: m.content } : { output: m.content },
          },
        });
        break;
    }
  }
  return turns.filter((t) => (t.parts?.length ?? 0) > 0);
}

/** Builds the generateContent parameters (body + per-call config) of a neutral request. */
export function toGeminiParams(model: string, request: EngineRequest): GenerateContentParameters {
  const functionDeclarations: FunctionDeclaration[] | undefined = request.tools?.map((t) => ({
    name: t.name,
    ...(t.description ? { description: t.description } : {}),
    parametersJsonSchema: t.parameters,
  }));
  return {
    model,
    contents: toGeminiContents(request.messages),
    config: {
      ...(request.system ? { systemInstruction: { parts: [{ text: request.system }] } } : {}),
      ...(functionDeclarations?.length ? { tools: [{ functionDeclarations }] } : {}),
      maxOutputTokens: request.maxTokens,
      ...(request.temperature !== undefined ? { temperature: request.temperature } : {}),
      // One logical call = one HTTP request: breakwater owns retries and continuation hops.
      automaticContinuation: false,
      httpOptions: { headers: idempotencyHeaders(request) },
      ...(request.signal ? { abortSignal: request.signal } : {}),
    },
  };
}

const REFUSALS = new Set([
  'SAFETY',
  'RECITATION',
  'BLOCKLIST',
  'PROHIBITED_CONTENT',
  'SPII',
  'IMAGE_SAFETY',
  'IMAGE_PROHIBITED_CONTENT',
]);

function mapFinishReason(reason: string | undefined, hasCalls: boolean): StopReason {
  if (reason === 'MAX_TOKENS') return 'max_tokens';
  if (reason && REFUSALS.has(reason)) return 'refusal';
  if (hasCalls) return 'tool_use';
  if (reason === 'STOP' || reason === undefined) return 'end_turn';
  return 'other';
}

/**
 * Reads text, tool calls, stop reason and usage from a generateContent response. Function calls
 * get the stable id `${name}-${index}` (index within that turn).
 */
export function fromGeminiResponse(
  response: GenerateContentResponse,
  fallbackModel: string,
): ProviderOutcome {
  const candidate = response.candidates?.[0];
  let text = '';
  const toolCalls: ToolCall[] = [];
  for (const part of candidate?.content?.parts ?? []) {
    if (part.functionCall) {
      const name = part.functionCall.name ?? '';
      toolCalls.push({ id: `${name}-${toolCalls.length}`, name, arguments: part.functionCall.args ?? {} });
    } else if (typeof part.text === 'string' && !part.thought) {
      text += part.text;
    }
  }
  const blocked = !candidate && response.promptFeedback?.blockReason !== undefined;
  const u = response.usageMetadata;
  return {
    text,
    toolCalls,
    stopReason: blocked ? 'refusal' : mapFinishReason(candidate?.finishReason, toolCalls.length > 0),
    usage: geminiCounts(u),
    model: response.modelVersion || fallbackModel,
    ...(response.responseId ? { requestId: response.responseId } : {}),
  };
}

/**
 * The counts of a `usageMetadata`: the prompt's, and the output's (thinking tokens are billed as output). Absent
 * when not sent: a stream's early chunks carry only the prompt count, a proxy may strip it all.
 */
function geminiCounts(u: GenerateContentResponse['usageMetadata']): ReportedCounts {
  const output =
    u?.candidatesTokenCount !== undefined || u?.thoughtsTokenCount !== undefined
      ? (u.candidatesTokenCount ?? 0) + (u.thoughtsTokenCount ?? 0)
      : undefined;
  return countsOf(u?.promptTokenCount, output);
}

/**
 * Reads a `streamGenerateContent` (SSE) stream: text parts go to `sink` as they come (thoughts skipped);
 * function calls, the finish reason and the last `usageMetadata` are kept. A stream without a `finishReason` was
 * cut (genai throws on a chunk cut mid-JSON: a cut too).
 */
export async function readGeminiStream(
  responses: AsyncIterable<GenerateContentResponse>,
  sink: StreamSink,
  fallbackModel: string,
  touch: () => void = () => {},
): Promise<ProviderOutcome> {
  let text = '';
  let model = fallbackModel;
  let finish: string | undefined;
  let requestId: string | undefined;
  let usage: GenerateContentResponse['usageMetadata'];
  let blocked = false;
  const toolCalls: ToolCall[] = [];
  try {
    for await (const response of responses) {
      touch();
      const candidate = response.candidates?.[0];
      for (const part of candidate?.content?.parts ?? []) {
        if (part.functionCall) {
          const name = part.functionCall.name ?? '';
          toolCalls.push({
            id: `${name}-${toolCalls.length}`,
            name,
            arguments: part.functionCall.args ?? {},
          });
        } else if (typeof part.text === 'string' && part.text && !part.thought) {
          text += part.text;
          sink.text(part.text);
        }
      }
      if (candidate?.finishReason) finish = candidate.finishReason;
      if (!candidate && response.promptFeedback?.blockReason !== undefined) blocked = true;
      if (response.usageMetadata) usage = response.usageMetadata;
      if (response.modelVersion) model = response.modelVersion;
      if (response.responseId) requestId = response.responseId;
    }
  } catch (err) {
    throw streamFailure(err);
  }
  if (!finish && !blocked) throw new StreamCutError('no finishReason');
  return {
    text,
    toolCalls,
    stopReason: blocked ? 'refusal' : mapFinishReason(finish, toolCalls.length > 0),
    usage: geminiCounts(usage),
    model,
    ...(requestId ? { requestId } : {}),
  };
}

/**
 * An {@link Engine} over Gemini's native generateContent (`@google/genai`). One client per engine,
 * no `retryOptions` (the SDK then never retries), deadlines from {@link timedFetch}. The client holds
 * the credential's marker, never the key: `credentialFetch` puts the key on the wire (default
 * credential: the config's key, sealed).
 *
 * @example
 * ```ts
 * const cfg = parseEndpointConfig({ id: 'g', provider: 'gemini', model: 'gemini-2.5-flash', apiKeyEnv: 'GEMINI_API_KEY' });
 * const engine = createGeminiEngine(cfg, describeEndpoint(cfg), systemClock);
 * ```
 */
export function createGeminiEngine(
  config: ParsedEndpointConfig,
  endpoint: EndpointDescriptor,
  clock: Clock,
  wallNow: () => number = Date.now,
  credential: CallCredential | undefined = endpointCredential(config),
  wireScale = 1,
  quotaDayNow?: () => number,
): Engine {
  const baseUrl = effectiveBaseURL(config);
  const client = new GoogleGenAI({
    // Explicit, so GOOGLE_GENAI_USE_VERTEXAI in the environment cannot switch the backend.
    vertexai: false,
    apiKey: credential?.marker ?? '',
    httpOptions: { ...(baseUrl ? { baseUrl } : {}), fetch: timedFetch },
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
        const response = await client.models.generateContent(toGeminiParams(config.model, request));
        return fromGeminiResponse(response, config.model);
      }),
    stream: (request: EngineRequest, sink: StreamSink) =>
      runEngineCall(
        ctx,
        request,
        async (touch) => {
          const responses = await client.models.generateContentStream(toGeminiParams(config.model, request));
          return readGeminiStream(responses, sink, config.model, touch);
        },
        true,
      ),
  });
}
