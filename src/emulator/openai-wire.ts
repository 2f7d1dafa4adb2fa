import type { EmulatorFlavor } from './emulator-types.ts';
import { goDuration } from './rate-limit-headers-out.ts';
import type { ErrorSpec, WireContext, WireErrorResponse, WireModule } from './wire-module.ts';
import { commonError, json, splitText, sse, textPieces } from './wire-module.ts';
import type { GeneratedAnswer, WireMessage, WireRequest, WireTool } from './wire-request.ts';
import { contentText, estimateTokens, requestText, WireRequestError } from './wire-request.ts';
import { geminiErrorObject } from './gemini-wire.ts';

/**
 * OpenAI Chat Completions (`POST …/chat/completions`), spoken by OpenAI, vLLM, Ollama and
 * Gemini's compat endpoint; they differ only in their error envelopes (wire facts §2, §3.2, §4).
 */

type Dialect = Extract<EmulatorFlavor, 'openai' | 'vllm' | 'ollama' | 'gemini-compat'>;

const FINISH = { end_turn: 'stop', tool_use: 'tool_calls', max_tokens: 'length' } as const;

function parse(body: unknown): WireRequest {
  if (!body || typeof body !== 'object')
    throw new WireRequestError("Missing required parameter: 'messages'.");
  const b = body as Record<string, unknown>;
  if (typeof b.model !== 'string') throw new WireRequestError("Missing required parameter: 'model'.");
  if (!Array.isArray(b.messages)) throw new WireRequestError("Missing required parameter: 'messages'.");
  let system = '';
  const messages: WireMessage[] = [];
  const toolNames = new Map<string, string>();
  for (const m of b.messages as Array<Record<string, unknown>>) {
    const role = m?.role;
    if (role === 'system' || role === 'developer') system += contentText(m.content);
    else if (role === 'tool') {
      const id = String(m.tool_call_id ?? '');
      messages.push({
        role: 'tool_result',
        id,
        name: toolNames.get(id) ?? 'tool',
        text: contentText(m.content),
      });
    } else if (role === 'assistant') {
      const text = contentText(m.content);
      if (text) messages.push({ role: 'assistant', text });
      for (const c of (Array.isArray(m.tool_calls) ? m.tool_calls : []) as Array<Record<string, unknown>>) {
        const fn = (c.function ?? {}) as Record<string, unknown>;
        const id = String(c.id ?? '');
        toolNames.set(id, String(fn.name ?? ''));
        let args: unknown = fn.arguments;
        try {
          args = JSON.parse(String(fn.arguments ?? '{}'));
        } catch {}
        messages.push({ role: 'tool_call', id, name: String(fn.name ?? ''), args });
      }
    } else messages.push({ role: 'user', text: contentText(m?.content) });
  }
  const tools: WireTool[] = (Array.isArray(b.tools) ? b.tools : [])
    .map((t: Record<string, unknown>) => (t?.function ?? {}) as Record<string, unknown>)
    .filter((f: Record<string, unknown>) => typeof f.name === 'string')
    .map((f: Record<string, unknown>) => ({
      name: f.name as string,
      parameters: (f.parameters ?? {}) as Record<string, unknown>,
    }));
  // vLLM's `continue_final_message`: the last assistant text is continued, not answered.
  const last = messages[messages.length - 1];
  let prefill: string | undefined;
  if (b.continue_final_message === true && last?.role === 'assistant') {
    prefill = last.text;
    messages.pop();
  }
  const max = b.max_completion_tokens ?? b.max_tokens;
  const options = (b.stream_options ?? {}) as Record<string, unknown>;
  return {
    model: b.model,
    system,
    messages,
    tools,
    maxTokens: typeof max === 'number' ? max : 16_384,
    stream: b.stream === true,
    includeUsage: options.include_usage === true,
    inputTokens: estimateTokens(requestText(system, messages, tools) + (prefill ?? '')),
    ...(prefill !== undefined ? { prefill } : {}),
  };
}

const usage = (a: GeneratedAnswer) => ({
  prompt_tokens: a.inputTokens,
  completion_tokens: a.outputTokens,
  total_tokens: a.inputTokens + a.outputTokens,
  prompt_tokens_details: { cached_tokens: 0, audio_tokens: 0 },
  completion_tokens_details: {
    reasoning_tokens: 0,
    audio_tokens: 0,
    accepted_prediction_tokens: 0,
    rejected_prediction_tokens: 0,
  },
});

const callId = (a: GeneratedAnswer) => `call_${a.toolCall!.id.padEnd(24, '0')}`;

function success(req: WireRequest, answer: GeneratedAnswer, ctx: WireContext) {
  const message: Record<string, unknown> = { role: 'assistant', content: answer.text || null, refusal: null };
  if (answer.toolCall) {
    message.tool_calls = [
      {
        id: callId(answer),
        type: 'function',
        function: { name: answer.toolCall.name, arguments: JSON.stringify(answer.toolCall.args) },
      },
    ];
  }
  return {
    id: ctx.id('chatcmpl-', 29),
    object: 'chat.completion',
    created: Math.floor(ctx.now / 1000),
    model: req.model,
    system_fingerprint: 'fp_emulator',
    service_tier: 'default',
    choices: [{ index: 0, message, logprobs: null, finish_reason: FINISH[answer.stopReason] }],
    usage: usage(answer),
  };
}

function streamEvents(req: WireRequest, answer: GeneratedAnswer, ctx: WireContext): string[] {
  const id = ctx.id('chatcmpl-', 29);
  const created = Math.floor(ctx.now / 1000);
  const chunk = (delta: unknown, finish: string | null = null) =>
    sse({
      id,
      object: 'chat.completion.chunk',
      created,
      model: req.model,
      system_fingerprint: 'fp_emulator',
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(req.includeUsage ? { usage: null } : {}),
    });
  const out = [chunk({ role: 'assistant', content: '', refusal: null })];
  for (const piece of textPieces(answer.text, ctx)) out.push(chunk({ content: piece }));
  if (answer.toolCall) {
    out.push(
      chunk({
        tool_calls: [
          {
            index: 0,
            id: callId(answer),
            type: 'function',
            function: { name: answer.toolCall.name, arguments: '' },
          },
        ],
      }),
    );
    for (const piece of splitText(JSON.stringify(answer.toolCall.args), 2)) {
      out.push(chunk({ tool_calls: [{ index: 0, function: { arguments: piece } }] }));
    }
  }
  out.push(chunk({}, FINISH[answer.stopReason]));
  if (req.includeUsage) {
    out.push(
      sse({
        id,
        object: 'chat.completion.chunk',
        created,
        model: req.model,
        system_fingerprint: 'fp_emulator',
        choices: [],
        usage: usage(answer),
      }),
    );
  }
  out.push('data: [DONE]\n\n');
  return out;
}

const TYPE_FOR_DIMENSION = { rpm: 'requests', tpm: 'tokens', itpm: 'tokens', otpm: 'tokens' } as const;
const DIMENSION_TEXT = {
  rpm: 'requests per min (RPM)',
  tpm: 'tokens per min (TPM)',
  itpm: 'tokens per min (TPM)',
  otpm: 'tokens per min (TPM)',
} as const;
const VLLM_TYPE: Record<number, string> = {
  400: 'BadRequestError',
  401: 'AuthenticationError',
  404: 'NotFoundError',
  429: 'RateLimitError',
  500: 'InternalServerError',
  503: 'ServiceUnavailableError',
  504: 'GatewayTimeoutError',
};

/** The OpenAI-shaped error, before the dialect's envelope. */
function openaiError(spec: ErrorSpec): {
  status: number;
  type: string;
  code: string | null;
  message: string;
} {
  switch (spec.kind) {
    case 'rate_limit': {
      const d = spec.dimension ?? 'rpm';
      const counts =
        spec.limit !== undefined
          ? `Limit ${spec.limit}, Used ${spec.used ?? spec.limit}, Requested ${spec.requested ?? 1}. `
          : '';
      return {
        status: 429,
        type: TYPE_FOR_DIMENSION[d],
        code: 'rate_limit_exceeded',
        message:
          spec.message ??
          `Rate limit reached for ${spec.model} in organization org-emulator on ${DIMENSION_TEXT[d]}: ${counts}Please try again in ${goDuration(spec.retryAfterMs)}. Visit https://platform.openai.com/account/rate-limits to learn more.`,
      };
    }
    case 'spend_limit':
      return {
        status: 429,
        type: 'insufficient_quota',
        code: 'organization_spend_limit_exceeded',
        message:
          spec.message ??
          "You have reached your organization's spend limit. Raise it at https://platform.openai.com/settings/organization/limits or wait until it resets.",
      };
    case 'credit_exhausted':
      return {
        status: 429,
        type: 'insufficient_quota',
        code: 'insufficient_quota',
        message:
          spec.message ??
          'You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.',
      };
    case 'overloaded':
      return {
        status: 503,
        type: 'server_error',
        code: null,
        message: spec.message ?? 'The engine is currently overloaded, please try again later.',
      };
    case 'gateway_timeout':
      return {
        status: 504,
        type: 'server_error',
        code: null,
        message: spec.message ?? 'Gateway timeout. Please try again.',
      };
    case 'bad_key':
      return {
        status: 401,
        type: 'invalid_request_error',
        code: 'invalid_api_key',
        message:
          spec.message ??
          `Incorrect API key provided: ${spec.keyHint ?? 'sk-…'}. You can find your API key at https://platform.openai.com/account/api-keys.`,
      };
    case 'not_found':
      return { status: 404, type: 'invalid_request_error', code: 'model_not_found', message: spec.message };
    default:
      return {
        status: 400,
        type: 'invalid_request_error',
        code: null,
        message: spec.message ?? 'invalid request',
      };
  }
}

function makeError(dialect: Dialect) {
  return (spec: ErrorSpec, ctx: WireContext): WireErrorResponse => {
    const common = commonError(spec);
    if (common) return common;
    if (dialect === 'gemini-compat') {
      const g = geminiErrorObject(spec);
      const inner =
        spec.kind === 'rate_limit'
          ? {
              code: 429,
              message: 'Resource has been exhausted (e.g. check quota).',
              status: 'RESOURCE_EXHAUSTED',
            }
          : g.error;
      return json(g.status, [{ error: inner }]);
    }
    const e = openaiError(spec);
    if (dialect === 'vllm') {
      if (spec.kind === 'bad_key') return json(401, { error: 'Unauthorized' });
      return json(e.status, {
        error: {
          message: e.message,
          type: VLLM_TYPE[e.status] ?? 'InternalServerError',
          param: null,
          code: e.status,
        },
      });
    }
    if (dialect === 'ollama') {
      if (spec.kind === 'overloaded') return commonError({ kind: 'server_busy', model: spec.model })!;
      const type =
        e.status === 400 ? 'invalid_request_error' : e.status === 404 ? 'not_found_error' : 'api_error';
      return json(e.status, { error: { message: e.message, type, param: null, code: null } });
    }
    void ctx;
    return json(e.status, { error: { message: e.message, type: e.type, param: null, code: e.code } });
  };
}

/** Builds the Chat Completions wire module for one OpenAI-speaking flavor. */
export function openaiWire(dialect: Dialect): WireModule {
  return {
    parse,
    success,
    streamEvents,
    streamError: (_ctx, message) =>
      sse({
        error: {
          message: message ?? 'The server had an error while processing your request. Sorry about that!',
          type: 'server_error',
          param: null,
          code: dialect === 'vllm' ? 500 : null,
        },
      }),
    error: makeError(dialect),
  };
}
