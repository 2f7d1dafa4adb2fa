import type { EmulatorFaultKind, EmulatorFlavor } from './emulator-types.ts';
import type { QuotaDimension } from './quota-windows.ts';
import type { GeneratedAnswer, WireRequest } from './wire-request.ts';

/** Per-call context handed to a wire module when it renders. */
export interface WireContext {
  flavor: EmulatorFlavor;
  requestId: string;
  /** Clock ms (for `created` timestamps). */
  now: number;
  /** A fresh id with this prefix and this many random base62 chars (seeded). */
  id(prefix: string, length: number): string;
  /** Characters per streamed text delta (the profile's `streamChunkChars`); undefined: 3 deltas per answer. */
  chunkChars?: number | undefined;
}

/** A provider error the emulator must render in the provider's exact format. */
export type ErrorSpec =
  | {
      kind: 'rate_limit';
      model: string;
      /** Absent when the 429 comes from a fault rule rather than a quota. */
      dimension?: QuotaDimension;
      limit?: number;
      used?: number;
      requested?: number;
      /** Real ms the client should wait. */
      retryAfterMs: number;
      message?: string;
    }
  | {
      kind: Exclude<
        EmulatorFaultKind,
        | 'rate_limit'
        | 'rate_limit_no_retry_after'
        | 'connection_reset'
        | 'connection_refused'
        | 'hang_before_headers'
        | 'stall_after_headers'
        | 'stream_error'
        | 'stream_cut'
        | 'stream_stall'
        | 'stream_truncated'
        | 'stream_no_usage'
      >;
      model: string;
      /** Masked key hint for bad-key messages (never the plaintext key). */
      keyHint?: string;
      message?: string;
    }
  | { kind: 'bad_request' | 'not_found'; model: string; message: string };

/** A rendered HTTP response body. */
export interface WireErrorResponse {
  status: number;
  body: string;
  contentType: string;
}

/** What each provider's wire format implements. */
export interface WireModule {
  /** Parses a call's JSON body (`pathModel`/`pathStream` from Gemini's URL). Throws WireRequestError. */
  parse(body: unknown, path: { model?: string; stream?: boolean }): WireRequest;
  /** The non-streaming success body. */
  success(req: WireRequest, answer: GeneratedAnswer, ctx: WireContext): unknown;
  /** The complete SSE stream of a success, one string per event (each ends with a blank line). */
  streamEvents(req: WireRequest, answer: GeneratedAnswer, ctx: WireContext): string[];
  /** The SSE event that reports an overload after a 200 (`stream_error`). */
  streamError(ctx: WireContext, message?: string): string;
  /** The provider's exact error. */
  error(spec: ErrorSpec, ctx: WireContext): WireErrorResponse;
}

/** Formats one SSE event. */
export function sse(data: unknown, event?: string): string {
  const payload = typeof data === 'string' ? data : JSON.stringify(data);
  return `${event ? `event: ${event}\n` : ''}data: ${payload}\n\n`;
}

/** The streamed text deltas of an answer: pieces of `ctx.chunkChars`, or 3 pieces. */
export function textPieces(text: string, ctx: WireContext): string[] {
  const size = ctx.chunkChars;
  if (size === undefined) return splitText(text);
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/**
 * Whether one SSE event carries content (a text or tool-call delta) rather than framing (start, ping, stop,
 * usage): mid-stream faults count these. One place that knows every flavor's shape.
 */
export function isContentEvent(event: string): boolean {
  return (
    event.includes('"text_delta"') ||
    event.includes('"input_json_delta"') ||
    event.includes('"tool_calls"') ||
    event.includes('"functionCall"') ||
    event.includes('response.output_text.delta') ||
    event.includes('response.function_call_arguments.delta') ||
    /"content":"[^"]/.test(event) ||
    /"parts":\[\{"text":"[^"]/.test(event)
  );
}

/** Splits text into up to `parts` non-empty pieces, for streamed deltas. */
export function splitText(text: string, parts = 3): string[] {
  if (text.length === 0) return [];
  const size = Math.ceil(text.length / parts);
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

export const json = (status: number, body: unknown): WireErrorResponse => ({
  status,
  body: JSON.stringify(body),
  contentType: 'application/json',
});

/** Bodies that look the same whatever the provider (they come from the network path, not the API). */
export function commonError(spec: ErrorSpec): WireErrorResponse | undefined {
  switch (spec.kind) {
    case 'server_error_empty':
      return { status: 500, body: '', contentType: 'application/json' };
    case 'html_502':
      return {
        status: 502,
        body: '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n</body>\r\n</html>\r\n',
        contentType: 'text/html',
      };
    case 'server_busy':
      return json(503, {
        error: {
          message: spec.message ?? 'server busy, please try again.  maximum pending requests exceeded',
          type: 'api_error',
          param: null,
          code: null,
        },
      });
    default:
      return undefined;
  }
}

/** Formats thousands the way provider messages do (`50,000`). */
export const thousands = (n: number): string => n.toLocaleString('en-US');
