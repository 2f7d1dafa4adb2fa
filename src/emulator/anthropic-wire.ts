import type { ErrorSpec, WireContext, WireErrorResponse, WireModule } from './wire-module.ts';
import { commonError, json, splitText, sse, textPieces, thousands } from './wire-module.ts';
import type { GeneratedAnswer, WireMessage, WireRequest, WireTool } from './wire-request.ts';
import { contentText, estimateTokens, requestText, WireRequestError } from './wire-request.ts';

/** Anthropic Messages API (`POST /v1/messages`), wire facts §1. */

const STOP = { end_turn: 'end_turn', tool_use: 'tool_use', max_tokens: 'max_tokens' } as const;
const ORG = '8d3a4a3e-0f4c-4f7b-9a51-emulat0r0000';

function parse(body: unknown): WireRequest {
  if (!body || typeof body !== 'object') throw new WireRequestError('messages: Field required');
  const b = body as Record<string, unknown>;
  if (typeof b.model !== 'string') throw new WireRequestError('model: Field required');
  if (typeof b.max_tokens !== 'number') throw new WireRequestError('max_tokens: Field required');
  if (!Array.isArray(b.messages)) throw new WireRequestError('messages: Field required');
  const system = contentText(b.system);
  const messages: WireMessage[] = [];
  const toolNames = new Map<string, string>();
  for (const m of b.messages as Array<Record<string, unknown>>) {
    const role = m?.role === 'assistant' ? 'assistant' : 'user';
    if (typeof m?.content === 'string') {
      messages.push({ role, text: m.content });
      continue;
    }
    for (const block of (Array.isArray(m?.content) ? m.content : []) as Array<Record<string, unknown>>) {
      if (block?.type === 'tool_use') {
        const id = String(block.id ?? '');
        toolNames.set(id, String(block.name ?? ''));
        messages.push({ role: 'tool_call', id, name: String(block.name ?? ''), args: block.input ?? {} });
      } else if (block?.type === 'tool_result') {
        const id = String(block.tool_use_id ?? '');
        messages.push({
          role: 'tool_result',
          id,
          name: toolNames.get(id) ?? 'tool',
          text: contentText(block.content),
        });
      } else if (typeof block?.text === 'string') {
        messages.push({ role, text: block.text });
      }
    }
  }
  // A last assistant text is a prefill: the answer continues it (and the API refuses one ending in whitespace).
  const last = messages[messages.length - 1];
  let prefill: string | undefined;
  if (last?.role === 'assistant') {
    if (/\s$/.test(last.text))
      throw new WireRequestError('messages: final assistant content cannot end with trailing whitespace');
    prefill = last.text;
    messages.pop();
  }
  const tools: WireTool[] = (Array.isArray(b.tools) ? b.tools : [])
    .filter((t: Record<string, unknown>) => typeof t?.name === 'string' && t.input_schema)
    .map((t: Record<string, unknown>) => ({
      name: t.name as string,
      parameters: (t.input_schema ?? {}) as Record<string, unknown>,
    }));
  return {
    model: b.model,
    system,
    messages,
    tools,
    maxTokens: b.max_tokens,
    stream: b.stream === true,
    includeUsage: true,
    inputTokens: estimateTokens(requestText(system, messages, tools) + (prefill ?? '')),
    ...(prefill !== undefined ? { prefill } : {}),
  };
}

const usage = (input: number, output: number) => ({
  input_tokens: input,
  output_tokens: output,
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
  server_tool_use: null,
  service_tier: 'standard',
});

function contentBlocks(answer: GeneratedAnswer) {
  const blocks: unknown[] = [];
  if (answer.text) blocks.push({ type: 'text', text: answer.text });
  if (answer.toolCall) {
    blocks.push({
      type: 'tool_use',
      id: `toolu_01${answer.toolCall.id}`,
      name: answer.toolCall.name,
      input: answer.toolCall.args,
    });
  }
  return blocks;
}

function success(req: WireRequest, answer: GeneratedAnswer, ctx: WireContext) {
  return {
    id: ctx.id('msg_01', 22),
    type: 'message',
    role: 'assistant',
    model: req.model,
    content: contentBlocks(answer),
    stop_reason: STOP[answer.stopReason],
    stop_sequence: null,
    usage: usage(answer.inputTokens, answer.outputTokens),
  };
}

function streamEvents(req: WireRequest, answer: GeneratedAnswer, ctx: WireContext): string[] {
  const ev = (data: { type: string }) => sse(data, data.type);
  const out = [
    ev({
      type: 'message_start',
      message: {
        id: ctx.id('msg_01', 22),
        type: 'message',
        role: 'assistant',
        content: [],
        model: req.model,
        stop_reason: null,
        stop_sequence: null,
        usage: usage(answer.inputTokens, 1),
      },
    } as { type: string }),
  ];
  let index = 0;
  if (answer.text) {
    out.push(
      ev({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } } as {
        type: string;
      }),
    );
    out.push(ev({ type: 'ping' }));
    for (const piece of textPieces(answer.text, ctx)) {
      out.push(
        ev({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: piece } } as {
          type: string;
        }),
      );
    }
    out.push(ev({ type: 'content_block_stop', index } as { type: string }));
    index++;
  }
  if (answer.toolCall) {
    const call = answer.toolCall;
    out.push(
      ev({
        type: 'content_block_start',
        index,
        content_block: { type: 'tool_use', id: `toolu_01${call.id}`, name: call.name, input: {} },
      } as { type: string }),
    );
    for (const piece of splitText(JSON.stringify(call.args), 2)) {
      out.push(
        ev({
          type: 'content_block_delta',
          index,
          delta: { type: 'input_json_delta', partial_json: piece },
        } as { type: string }),
      );
    }
    out.push(ev({ type: 'content_block_stop', index } as { type: string }));
  }
  out.push(
    ev({
      type: 'message_delta',
      delta: { stop_reason: STOP[answer.stopReason], stop_sequence: null },
      usage: { output_tokens: answer.outputTokens },
    } as { type: string }),
  );
  out.push(ev({ type: 'message_stop' }));
  return out;
}

const envelope = (
  status: number,
  type: string,
  message: string,
  ctx: WireContext,
  details?: unknown,
): WireErrorResponse =>
  json(status, {
    type: 'error',
    error: { type, message, ...(details ? { details } : {}) },
    request_id: ctx.requestId,
  });

const DIMENSION_TEXT = {
  rpm: 'requests per minute',
  tpm: 'tokens per minute',
  itpm: 'input tokens per minute',
  otpm: 'output tokens per minute',
} as const;

function error(spec: ErrorSpec, ctx: WireContext): WireErrorResponse {
  const common = commonError(spec);
  if (common) return common;
  switch (spec.kind) {
    case 'rate_limit': {
      const what =
        spec.dimension && spec.limit !== undefined
          ? ` of ${thousands(spec.limit)} ${DIMENSION_TEXT[spec.dimension]}`
          : '';
      const message =
        spec.message ??
        `This request would exceed your organization's rate limit${what} (org: ${ORG}, model: ${spec.model}). For details, refer to: https://docs.claude.com/en/api/rate-limits. You can see the response headers for current usage. Please reduce the prompt length or the maximum tokens requested, or try again later. You may also contact sales at https://www.anthropic.com/contact-sales to discuss your options for a rate limit increase.`;
      return envelope(429, 'rate_limit_error', message, ctx);
    }
    case 'spend_limit':
      return envelope(
        429,
        'rate_limit_error',
        spec.message ??
          "You have reached your organization's monthly spend limit for this usage tier. Access resumes at 00:00 UTC on the 1st of next month, or raise the limit in the Console.",
        ctx,
        { error_code: 'enforced_spend_limit_reached' },
      );
    case 'overloaded':
      return envelope(529, 'overloaded_error', spec.message ?? 'Overloaded', ctx);
    case 'gateway_timeout':
      return envelope(
        504,
        'timeout_error',
        spec.message ?? 'The request timed out while processing. Consider using streaming.',
        ctx,
      );
    case 'bad_key':
      return envelope(401, 'authentication_error', spec.message ?? 'invalid x-api-key', ctx);
    case 'credit_exhausted':
      return envelope(
        400,
        'invalid_request_error',
        spec.message ??
          'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.',
        ctx,
      );
    case 'not_found':
      return envelope(404, 'not_found_error', spec.message, ctx);
    default:
      return envelope(400, 'invalid_request_error', spec.message ?? 'invalid request', ctx);
  }
}

/** The Anthropic wire module. */
export const anthropicWire: WireModule = {
  parse,
  success,
  streamEvents,
  streamError: (_ctx, message) =>
    sse({ type: 'error', error: { type: 'overloaded_error', message: message ?? 'Overloaded' } }, 'error'),
  error,
};
