import { openaiWire } from './openai-wire.ts';
import type { WireContext, WireModule } from './wire-module.ts';
import { sse } from './wire-module.ts';
import type { GeneratedAnswer, WireMessage, WireRequest, WireTool } from './wire-request.ts';
import { contentText, estimateTokens, requestText, WireRequestError } from './wire-request.ts';

/** OpenAI Responses API (`POST /v1/responses`), wire facts §2.2: items in, items out, typed SSE events. */

function parse(body: unknown): WireRequest {
  if (!body || typeof body !== 'object') throw new WireRequestError("Missing required parameter: 'input'.");
  const b = body as Record<string, unknown>;
  if (typeof b.model !== 'string') throw new WireRequestError("Missing required parameter: 'model'.");
  let system = typeof b.instructions === 'string' ? b.instructions : '';
  const messages: WireMessage[] = [];
  const names = new Map<string, string>();
  const items =
    typeof b.input === 'string'
      ? [{ role: 'user', content: b.input }]
      : Array.isArray(b.input)
        ? b.input
        : [];
  for (const it of items as Array<Record<string, unknown>>) {
    if (it?.type === 'function_call') {
      const id = String(it.call_id ?? '');
      names.set(id, String(it.name ?? ''));
      let args: unknown = it.arguments;
      try {
        args = JSON.parse(String(it.arguments ?? '{}'));
      } catch {}
      messages.push({ role: 'tool_call', id, name: String(it.name ?? ''), args });
    } else if (it?.type === 'function_call_output') {
      const id = String(it.call_id ?? '');
      messages.push({ role: 'tool_result', id, name: names.get(id) ?? 'tool', text: contentText(it.output) });
    } else if (it?.role === 'system' || it?.role === 'developer') system += contentText(it.content);
    else if (it?.role === 'assistant') messages.push({ role: 'assistant', text: contentText(it.content) });
    else if (it?.role === 'user') messages.push({ role: 'user', text: contentText(it.content) });
  }
  const tools: WireTool[] = (Array.isArray(b.tools) ? b.tools : [])
    .filter((t: Record<string, unknown>) => t?.type === 'function' && typeof t.name === 'string')
    .map((t: Record<string, unknown>) => ({
      name: t.name as string,
      parameters: (t.parameters ?? {}) as Record<string, unknown>,
    }));
  return {
    model: b.model,
    system,
    messages,
    tools,
    maxTokens: typeof b.max_output_tokens === 'number' ? b.max_output_tokens : 16_384,
    stream: b.stream === true,
    includeUsage: true,
    inputTokens: estimateTokens(requestText(system, messages, tools)),
  };
}

interface Ids {
  resp: string;
  msg: string;
  fc: string;
}

const ids = (ctx: WireContext): Ids => ({
  resp: ctx.id('resp_', 24),
  msg: ctx.id('msg_', 24),
  fc: ctx.id('fc_', 24),
});

function outputItems(answer: GeneratedAnswer, id: Ids): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  if (answer.text) {
    out.push({
      type: 'message',
      id: id.msg,
      status: answer.stopReason === 'max_tokens' ? 'incomplete' : 'completed',
      role: 'assistant',
      content: [{ type: 'output_text', text: answer.text, annotations: [], logprobs: [] }],
    });
  }
  if (answer.toolCall) {
    out.push({
      type: 'function_call',
      id: id.fc,
      call_id: `call_${answer.toolCall.id.padEnd(24, '0')}`,
      name: answer.toolCall.name,
      arguments: JSON.stringify(answer.toolCall.args),
      status: 'completed',
    });
  }
  return out;
}

function response(req: WireRequest, answer: GeneratedAnswer | undefined, id: Ids, ctx: WireContext) {
  const incomplete = answer?.stopReason === 'max_tokens';
  return {
    id: id.resp,
    object: 'response',
    created_at: Math.floor(ctx.now / 1000),
    status: !answer ? 'in_progress' : incomplete ? 'incomplete' : 'completed',
    error: null,
    incomplete_details: incomplete ? { reason: 'max_output_tokens' } : null,
    instructions: req.system || null,
    max_output_tokens: req.maxTokens,
    model: req.model,
    output: answer ? outputItems(answer, id) : [],
    parallel_tool_calls: true,
    temperature: 1,
    tool_choice: 'auto',
    tools: req.tools.map((t) => ({
      type: 'function',
      name: t.name,
      parameters: t.parameters,
      strict: false,
    })),
    top_p: 1,
    usage: answer
      ? {
          input_tokens: answer.inputTokens,
          input_tokens_details: { cached_tokens: 0 },
          output_tokens: answer.outputTokens,
          output_tokens_details: { reasoning_tokens: 0 },
          total_tokens: answer.inputTokens + answer.outputTokens,
        }
      : null,
  };
}

function streamEvents(req: WireRequest, answer: GeneratedAnswer, ctx: WireContext): string[] {
  const id = ids(ctx);
  let seq = 0;
  const out: string[] = [];
  const ev = (type: string, data: Record<string, unknown>) =>
    out.push(sse({ type, ...data, sequence_number: seq++ }, type));
  ev('response.created', { response: response(req, undefined, id, ctx) });
  ev('response.in_progress', { response: response(req, undefined, id, ctx) });
  const items = outputItems(answer, id);
  items.forEach((item, output_index) => {
    if (item.type === 'message') {
      ev('response.output_item.added', {
        output_index,
        item: { ...item, status: 'in_progress', content: [] },
      });
      const part = { type: 'output_text', text: '', annotations: [], logprobs: [] };
      ev('response.content_part.added', { item_id: id.msg, output_index, content_index: 0, part });
      for (const delta of answer.text.match(/[\s\S]{1,40}/g) ?? []) {
        ev('response.output_text.delta', {
          item_id: id.msg,
          output_index,
          content_index: 0,
          delta,
          logprobs: [],
        });
      }
      ev('response.output_text.done', {
        item_id: id.msg,
        output_index,
        content_index: 0,
        text: answer.text,
        logprobs: [],
      });
      ev('response.content_part.done', {
        item_id: id.msg,
        output_index,
        content_index: 0,
        part: { ...part, text: answer.text },
      });
    } else {
      ev('response.output_item.added', {
        output_index,
        item: { ...item, arguments: '', status: 'in_progress' },
      });
      ev('response.function_call_arguments.delta', { item_id: id.fc, output_index, delta: item.arguments });
      ev('response.function_call_arguments.done', {
        item_id: id.fc,
        output_index,
        arguments: item.arguments,
      });
    }
    ev('response.output_item.done', { output_index, item });
  });
  const final = response(req, answer, id, ctx);
  ev(final.status === 'incomplete' ? 'response.incomplete' : 'response.completed', { response: final });
  return out;
}

const chat = openaiWire('openai');

/** The Responses API wire module (OpenAI flavor only; errors share the Chat Completions envelope). */
export const responsesWire: WireModule = {
  parse,
  success: (req, answer, ctx) => response(req, answer, ids(ctx), ctx),
  streamEvents,
  streamError: (_ctx, message) =>
    sse(
      {
        type: 'error',
        code: 'server_error',
        message: message ?? 'The server had an error while processing your request. Sorry about that!',
        param: null,
        sequence_number: 3,
      },
      'error',
    ),
  error: chat.error,
};
