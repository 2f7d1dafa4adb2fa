import type { CompatFlavor, ProviderKind } from '../engines/engine-types.ts';
import { retryAfterFromHeaders, retryAfterFromText } from '../ratelimit/retry-after.ts';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import { type ErrorFacts, readErrorFacts } from './error-facts.ts';
import { type Fault, type FaultKind, isTransientFault } from './fault.ts';
import { kindFromProviderError } from './fault-rules.ts';

/** What the engine adapter knows about a failed call besides the thrown error. */
export interface ClassifyContext {
  /** Which wire protocol the endpoint speaks. */
  provider: ProviderKind;
  /** For `openai-compatible` endpoints: the server behind it. `gemini-compat` reads Google error bodies. */
  flavor?: CompatFlavor;
  /** Copied into the fault. */
  endpointId?: string;
  /** Epoch ms at classification; HTTP-date and RFC 3339 resets are measured from it. */
  now: number;
  /**
   * The adapter's own deadline fired: `headers` (none before the deadline) or `idle` (the body
   * stalled). Makes any status-less error a `timeout`, even when the SDK reports an abort.
   */
  timedOut?: 'headers' | 'idle';
  /** The caller's AbortSignal fired: a status-less error becomes `cancelled` (unless `timedOut`). */
  callerAborted?: boolean;
  /** Response headers the adapter's fetch wrapper captured (Gemini's `ApiError` carries none). Default: none. */
  headers?: Headers;
  /** Raw response body text, when captured (Gemini-compat's array body, which the OpenAI SDK drops). Default: none. */
  bodyText?: string;
  /**
   * HTTP status of the error response, when captured. Only needed when the SDK error lost it: genai
   * throws a bare `SyntaxError` for a truncated JSON error body. Values below 400 are ignored. Default: none.
   */
  status?: number;
}

const MAX_MESSAGE_CHARS = 300;

/** undici/system codes that mean "gave up waiting", not "the connection broke". */
const TIMEOUT_CODES: ReadonlySet<string> = new Set([
  'ETIMEDOUT',
  'ESOCKETTIMEDOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CONNECT_TIMEOUT',
]);

const CONNECTION_TEXT =
  /fetch failed|\bterminated\b|socket hang up|other side closed|ECONNREFUSED|ECONNRESET|ENOTFOUND|EAI_AGAIN|EPIPE|EHOSTUNREACH|ENETUNREACH|network error|connection (?:error|refused|reset|closed)/i;

/**
 * Turns anything a provider SDK (or fetch) threw into one classified {@link Fault}, following the
 * classification table of provider-wire-facts §6.4. Never throws.
 *
 * Order: an HTTP status (or, for a stream error, the provider error type) decides first; without
 * one, the adapter's `timedOut` wins, then `callerAborted`, then the SDK's timeout / abort /
 * connection error classes, then raw `fetch failed` causes. Anything unrecognised is a
 * `bad_request` carrying the scrubbed text.
 *
 * `retryAfterMs` is set for transient kinds only, from the headers (`retry-after-ms`, `retry-after`,
 * `x-ratelimit-reset-*`, `anthropic-ratelimit-*-reset`), then Gemini's `RetryInfo.retryDelay`, then
 * the message text ("Please retry in 53s"). The message is one short line with secrets scrubbed.
 *
 * @example
 * ```ts
 * try {
 *   await client.messages.create(body);
 * } catch (err) {
 *   const fault = classifyError(err, { provider: 'anthropic', now: clock.now(), endpointId: 'primary' });
 *   if (fault.kind === 'rate_limited') coolFor(fault.retryAfterMs ?? 30_000);
 *   throw new EngineFaultError(fault);
 * }
 * ```
 */
export function classifyError(error: unknown, ctx: ClassifyContext): Fault {
  try {
    return classify(error, ctx);
  } catch (internal) {
    // A classifier bug must not take the agent down with it: report what we can.
    return buildFault(ctx, 'bad_request', { message: `unclassifiable error: ${describe(error, internal)}` });
  }
}

function classify(error: unknown, ctx: ClassifyContext): Fault {
  const f = readErrorFacts(error, ctx.headers, ctx.bodyText, ctx.status);
  const headers = f.headers ?? ctx.headers;
  const hasRetryAfterHeader = headers ? headers.has('retry-after') || headers.has('retry-after-ms') : false;
  const { kind, byProvider } = decideKind(f, ctx, hasRetryAfterHeader);

  const fields: FaultFields = { message: messageOf(f, kind, byProvider) };
  if (f.status !== undefined) fields.status = f.status;
  const requestId = headers?.get('request-id') ?? headers?.get('x-request-id') ?? f.requestId;
  if (requestId) fields.requestId = requestId;
  // A body the adapter captured says nothing about a socket that broke: then the cause code is the code.
  const code = byProvider
    ? (f.errorCode ?? f.google?.reasons[0] ?? f.type ?? f.google?.status ?? f.causeCode)
    : f.causeCode;
  if (code) fields.code = code;
  if (isTransientFault(kind)) {
    const retryAfterMs =
      (headers ? retryAfterFromHeaders(headers, ctx.now) : undefined) ??
      (byProvider ? f.google?.retryDelayMs : undefined) ??
      (byProvider && f.apiMessage ? retryAfterFromText(f.apiMessage) : undefined) ??
      retryAfterFromText(f.message);
    if (retryAfterMs !== undefined) fields.retryAfterMs = retryAfterMs;
  }
  return buildFault(ctx, kind, fields);
}

/** `byProvider`: the kind came from the provider's status/body, so the body's code and message apply. */
function decideKind(
  f: ErrorFacts,
  ctx: ClassifyContext,
  hasRetryAfterHeader: boolean,
): { kind: FaultKind; byProvider: boolean } {
  const local = (kind: FaultKind) => ({ kind, byProvider: false });
  const provider = () => ({
    kind: kindFromProviderError(ctx.provider, ctx.flavor, f, hasRetryAfterHeader),
    byProvider: true,
  });
  if (f.status !== undefined) return provider();
  if (ctx.timedOut) return local('timeout');
  if (ctx.callerAborted) return local('cancelled');
  const is = (name: string) => f.names.has(name);
  // The timeout class extends the connection class: test it first.
  if (is('APIConnectionTimeoutError') || is('TimeoutError')) return local('timeout');
  if (is('APIUserAbortError')) return local('cancelled');
  // A raw AbortError: openai/anthropic turn their own timeouts into APIConnectionTimeoutError, so
  // theirs is the caller's signal; genai's httpOptions.timeout also surfaces as a bare AbortError.
  if (is('AbortError')) return local(ctx.provider === 'gemini' ? 'timeout' : 'cancelled');
  if (f.causeCode && TIMEOUT_CODES.has(f.causeCode)) return local('timeout');
  if (is('APIConnectionError') || f.causeCode) return local('network');
  if (f.hasProviderBody) return provider();
  // The SDK could not parse what the provider sent: the response was broken, not the request.
  if (is('SyntaxError')) return local('server_error');
  if (CONNECTION_TEXT.test(f.message)) return local('network');
  return local('bad_request');
}

function messageOf(f: ErrorFacts, kind: FaultKind, byProvider: boolean): string {
  const httpLine =
    f.status !== undefined ? `HTTP ${f.status}${f.statusText ? ` ${f.statusText}` : ''}` : undefined;
  // genai's message is the JSON body itself: without a message inside, say the status instead.
  const bodyAsMessage = /^\s*(?:got status: [^{]*)?[[{]/.test(f.message);
  let text = (byProvider ? f.apiMessage : undefined) ?? (bodyAsMessage && httpLine ? httpLine : f.message);
  if ((kind === 'network' || kind === 'timeout') && f.causeMessage && !text.includes(f.causeMessage)) {
    text = `${text} (${f.causeMessage})`;
  }
  if (/<\/?(?:html|head|body|title|h1|center|hr|p)\b/i.test(text)) text = text.replace(/<[^>]*>/g, ' ');
  return oneLine(text) || httpLine || kind;
}

/** Scrub first, then cut: cutting first could leave a key stub too short for its shape to match. */
function oneLine(text: string): string {
  const flat = scrubSecrets(text.replace(/\s+/g, ' ').trim());
  return flat.length > MAX_MESSAGE_CHARS ? `${flat.slice(0, MAX_MESSAGE_CHARS - 1)}…` : flat;
}

interface FaultFields {
  message: string;
  status?: number;
  retryAfterMs?: number;
  requestId?: string;
  code?: string;
}

function buildFault(ctx: ClassifyContext, kind: FaultKind, fields: FaultFields): Fault {
  const fault: { -readonly [K in keyof Fault]: Fault[K] } = {
    kind,
    provider: ctx.provider,
    message: oneLine(fields.message),
  };
  if (fields.status !== undefined) fault.status = fields.status;
  if (fields.retryAfterMs !== undefined) fault.retryAfterMs = fields.retryAfterMs;
  if (fields.requestId !== undefined) fault.requestId = scrubSecrets(fields.requestId);
  if (fields.code !== undefined) fault.code = scrubSecrets(fields.code);
  if (ctx.endpointId !== undefined) fault.endpointId = ctx.endpointId;
  return Object.freeze(fault);
}

function describe(error: unknown, internal: unknown): string {
  try {
    const e = error as { message?: unknown } | null;
    const text = typeof e?.message === 'string' ? e.message : String(error);
    return `${text} [classifier: ${String((internal as Error)?.message ?? internal)}]`;
  } catch {
    return 'unprintable value';
  }
}
