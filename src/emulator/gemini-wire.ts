import type { ErrorSpec, WireContext, WireErrorResponse, WireModule } from './wire-module.ts';
import { commonError, json, sse, textPieces } from './wire-module.ts';
import type { GeneratedAnswer, WireMessage, WireRequest, WireTool } from './wire-request.ts';
import { contentText, estimateTokens, requestText, WireRequestError } from './wire-request.ts';

/** Gemini native `models/{m}:generateContent` / `:streamGenerateContent?alt=sse`, wire facts §3. */

const FINISH = { end_turn: 'STOP', tool_use: 'STOP', max_tokens: 'MAX_TOKENS' } as const;
const HELP = {
  '@type': 'type.googleapis.com/google.rpc.Help',
  links: [
    {
      description: 'Learn more about Gemini API quotas',
      url: 'https://ai.google.dev/gemini-api/docs/rate-limits',
    },
  ],
};

function partsText(parts: unknown): string {
  return Array.isArray(parts) ? parts.map((p) => (typeof p?.text === 'string' ? p.text : '')).join('') : '';
}

function parse(body: unknown, path: { model?: string; stream?: boolean }): WireRequest {
  if (!body || typeof body !== 'object')
    throw new WireRequestError('* GenerateContentRequest.contents: contents is not specified');
  const b = body as Record<string, unknown>;
  if (!Array.isArray(b.contents))
    throw new WireRequestError('* GenerateContentRequest.contents: contents is not specified');
  const si = b.systemInstruction as Record<string, unknown> | string | undefined;
  const system = typeof si === 'string' ? si : partsText(si?.parts);
  const messages: WireMessage[] = [];
  let n = 0;
  for (const c of b.contents as Array<Record<string, unknown>>) {
    const role = c?.role === 'model' ? 'assistant' : 'user';
    for (const p of (Array.isArray(c?.parts) ? c.parts : []) as Array<Record<string, unknown>>) {
      if (p?.functionCall) {
        const fc = p.functionCall as Record<string, unknown>;
        messages.push({
          role: 'tool_call',
          id: String(fc.id ?? `fc${n++}`),
          name: String(fc.name ?? ''),
          args: fc.args ?? {},
        });
      } else if (p?.functionResponse) {
        const fr = p.functionResponse as Record<string, unknown>;
        messages.push({
          role: 'tool_result',
          id: String(fr.id ?? ''),
          name: String(fr.name ?? 'tool'),
          text: contentText(fr.response),
        });
      } else if (typeof p?.text === 'string') messages.push({ role, text: p.text });
    }
  }
  const tools: WireTool[] = [];
  for (const t of (Array.isArray(b.tools) ? b.tools : []) as Array<Record<string, unknown>>) {
    for (const f of (Array.isArray(t?.functionDeclarations) ? t.functionDeclarations : []) as Array<
      Record<string, unknown>
    >) {
      if (typeof f?.name !== 'string') continue;
      tools.push({
        name: f.name,
        parameters: (f.parametersJsonSchema ?? f.parameters ?? {}) as Record<string, unknown>,
      });
    }
  }
  const gen = (b.generationConfig ?? {}) as Record<string, unknown>;
  return {
    model: path.model ?? 'gemini',
    system,
    messages,
    tools,
    maxTokens: typeof gen.maxOutputTokens === 'number' ? gen.maxOutputTokens : 8_192,
    stream: path.stream === true,
    includeUsage: true,
    inputTokens: estimateTokens(requestText(system, messages, tools)),
  };
}

const usageMetadata = (a: GeneratedAnswer) => ({
  promptTokenCount: a.inputTokens,
  candidatesTokenCount: a.outputTokens,
  totalTokenCount: a.inputTokens + a.outputTokens,
  thoughtsTokenCount: 0,
  cachedContentTokenCount: 0,
});

function parts(answer: GeneratedAnswer): unknown[] {
  const out: unknown[] = [];
  if (answer.text) out.push({ text: answer.text });
  if (answer.toolCall) out.push({ functionCall: { name: answer.toolCall.name, args: answer.toolCall.args } });
  return out;
}

function success(req: WireRequest, answer: GeneratedAnswer, ctx: WireContext) {
  return {
    candidates: [
      { content: { role: 'model', parts: parts(answer) }, finishReason: FINISH[answer.stopReason], index: 0 },
    ],
    usageMetadata: usageMetadata(answer),
    modelVersion: req.model,
    responseId: ctx.id('', 22),
  };
}

function streamEvents(req: WireRequest, answer: GeneratedAnswer, ctx: WireContext): string[] {
  const responseId = ctx.id('', 22);
  const pieces: unknown[][] = textPieces(answer.text, ctx).map((t) => [{ text: t }]);
  if (answer.toolCall)
    pieces.push([{ functionCall: { name: answer.toolCall.name, args: answer.toolCall.args } }]);
  if (pieces.length === 0) pieces.push([{ text: '' }]);
  return pieces.map((p, i) => {
    const last = i === pieces.length - 1;
    return sse({
      candidates: [
        {
          content: { role: 'model', parts: p },
          ...(last ? { finishReason: FINISH[answer.stopReason] } : {}),
          index: 0,
        },
      ],
      usageMetadata: last
        ? usageMetadata(answer)
        : { promptTokenCount: answer.inputTokens, totalTokenCount: answer.inputTokens },
      modelVersion: req.model,
      responseId,
    });
  });
}

/** protobuf Duration text: `47s`, `1.203s`. */
export const protoDuration = (ms: number): string => `${Number((Math.max(0, ms) / 1000).toFixed(3))}s`;

const QUOTA_ID = {
  rpm: 'GenerateRequestsPerMinutePerProjectPerModel',
  tpm: 'GenerateContentInputTokensPerModelPerMinute',
  itpm: 'GenerateContentInputTokensPerModelPerMinute',
  otpm: 'GenerateContentOutputTokensPerModelPerMinute',
} as const;
const QUOTA_METRIC = {
  rpm: 'generativelanguage.googleapis.com/generate_content_requests',
  tpm: 'generativelanguage.googleapis.com/generate_content_input_token_count',
  itpm: 'generativelanguage.googleapis.com/generate_content_input_token_count',
  otpm: 'generativelanguage.googleapis.com/generate_content_output_token_count',
} as const;

/** The Gemini error object `{error:{code,message,status,details}}` and its HTTP status. */
export function geminiErrorObject(spec: ErrorSpec): { status: number; error: Record<string, unknown> } {
  const make = (code: number, status: string, message: string, details?: unknown[]) => ({
    status: code,
    error: { code, message, status, ...(details ? { details } : {}) },
  });
  switch (spec.kind) {
    case 'rate_limit': {
      const d = spec.dimension ?? 'rpm';
      const seconds = protoDuration(spec.retryAfterMs);
      return make(
        429,
        'RESOURCE_EXHAUSTED',
        spec.message ??
          `You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. To monitor your current usage, head to: https://ai.dev/usage?tab=rate-limit. \n* Quota exceeded for metric: ${QUOTA_METRIC[d]}, limit: ${spec.limit ?? 0}, model: ${spec.model}\nPlease retry in ${seconds}.`,
        [
          {
            '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
            violations: [
              {
                quotaMetric: QUOTA_METRIC[d],
                quotaId: QUOTA_ID[d],
                quotaDimensions: { location: 'global', model: spec.model },
                ...(spec.limit !== undefined ? { quotaValue: String(spec.limit) } : {}),
              },
            ],
          },
          HELP,
          { '@type': 'type.googleapis.com/google.rpc.RetryInfo', retryDelay: seconds },
        ],
      );
    }
    case 'credit_exhausted':
    case 'spend_limit':
      return make(
        429,
        'RESOURCE_EXHAUSTED',
        spec.message ??
          `You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. \n* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_requests, model: ${spec.model}`,
        [
          {
            '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
            violations: [
              {
                quotaMetric: 'generativelanguage.googleapis.com/generate_content_requests',
                quotaId: 'GenerateRequestsPerDayPerProjectPerModel',
                quotaDimensions: { location: 'global', model: spec.model },
              },
            ],
          },
          HELP,
        ],
      );
    case 'overloaded':
      return make(503, 'UNAVAILABLE', spec.message ?? 'The model is overloaded. Please try again later.');
    case 'gateway_timeout':
      return make(
        504,
        'DEADLINE_EXCEEDED',
        spec.message ?? 'Deadline expired before operation could complete.',
      );
    case 'bad_key': {
      const message = spec.message ?? 'API key not valid. Please pass a valid API key.';
      return make(400, 'INVALID_ARGUMENT', message, [
        {
          '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
          reason: 'API_KEY_INVALID',
          domain: 'googleapis.com',
          metadata: { service: 'generativelanguage.googleapis.com' },
        },
        { '@type': 'type.googleapis.com/google.rpc.LocalizedMessage', locale: 'en-US', message },
      ]);
    }
    case 'not_found':
      return make(404, 'NOT_FOUND', spec.message);
    case 'server_error_empty':
    case 'html_502':
    case 'server_busy':
      return make(503, 'UNAVAILABLE', spec.message ?? 'The service is currently unavailable.');
    default:
      return make(400, 'INVALID_ARGUMENT', spec.message ?? 'Request contains an invalid argument.');
  }
}

function error(spec: ErrorSpec, _ctx: WireContext): WireErrorResponse {
  const common = commonError(spec);
  if (common) return common;
  const g = geminiErrorObject(spec);
  return json(g.status, { error: g.error });
}

/** The Gemini native wire module. */
export const geminiWire: WireModule = {
  parse,
  success,
  streamEvents,
  streamError: (_ctx, message) =>
    sse({
      error: {
        code: 503,
        message: message ?? 'The model is overloaded. Please try again later.',
        status: 'UNAVAILABLE',
      },
    }),
  error,
};
