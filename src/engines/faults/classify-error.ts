import type { CompatFlavor, ProviderKind } from '../../core/engine-types.ts';
import { GEMINI_DAILY_RESET_ZONE, msUntilDailyReset } from '../wire/daily-quota-reset.ts';
import { retryAfterFromHeaders, retryAfterFromText } from '../wire/retry-after.ts';
import { capRetryAfter, DEFAULT_MAX_RETRY_AFTER_MS } from '../wire/retry-after-cap.ts';
import { scrubSecrets } from '../../redact/secret-scrubber.ts';
import { type ErrorFacts, readErrorFacts } from './error-facts.ts';
import { type Fault, type FaultKind, isTransientFault } from '../../core/fault.ts';
import { kindFromProviderError } from './fault-rules.ts';

/** What the engine adapter knows about a failed call besides the thrown error. */
export interface ClassifyContext {
  /** Which wire protocol the endpoint speaks. */
  provider: ProviderKind;
  /** For `openai-compatible` endpoints: the server behind it. `gemini-compat` reads Google error bodies. */
  flavor?: CompatFlavor;
  /** Copied into the fault. */
  endpointId?: string;
  /**
   * Wall-clock epoch ms when the response arrived (`Date.now()`, never a simulated or scenario clock):
   * HTTP-date `retry-after` and RFC 3339 reset instants are wall-clock, so they are measured from it.
   * The waits that come out are durations, which the caller applies on its own clock.
   */
  now: number;
  /**
   * Epoch ms whose calendar day a per-day quota counts (Gemini's, ending at midnight Pacific): the run's clock for
   * an endpoint that lives on it (the built-in emulator in a scenario), so a scenario's disable does not depend on
   * the hour it runs at. Default: `now`.
   */
  dayNow?: number;
  /**
   * Ceiling on a provider-given wait, ms: a longer one is cut to it and the fault carries
   * `retryAfterCappedFromMs`. Default {@link DEFAULT_MAX_RETRY_AFTER_MS} (15 min).
   */
  maxRetryAfterMs?: number;
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
 * the message text ("Please retry in 53s"); instants are read against `ctx.now` (wall clock), and a
 * wait over `ctx.maxRetryAfterMs` (15 min) is cut to it, the asked one kept as `retryAfterCappedFromMs`.
 * A Gemini per-day quota is `credit_exhausted` with `disableForMs` = time to the next midnight
 * America/Los_Angeles, said first in the message. The message is one short line with secrets scrubbed.
 *
 * @example
 * ```ts
 * try {
 *   await client.messages.create(body);
 * } catch (err) {
 *   const fault = classifyError(err, { provider: 'anthropic', now: Date.now(), endpointId: 'primary' });
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
    const asked =
      (headers ? retryAfterFromHeaders(headers, ctx.now) : undefined) ??
      (byProvider ? f.google?.retryDelayMs : undefined) ??
      (byProvider && f.apiMessage ? retryAfterFromText(f.apiMessage) : undefined) ??
      retryAfterFromText(f.message);
    if (asked !== undefined) {
      const capped = capRetryAfter(asked, ctx.maxRetryAfterMs ?? DEFAULT_MAX_RETRY_AFTER_MS);
      fields.retryAfterMs = capped.retryAfterMs;
      if (capped.cappedFromMs !== undefined) fields.retryAfterCappedFromMs = capped.cappedFromMs;
    }
  }
  const perDay = kind === 'credit_exhausted' && byProvider ? perDayQuotaId(f) : undefined;
  if (perDay !== undefined) {
    // The provider's window is a day, not our credit cooldown: the key is useless until its midnight.
    fields.disableForMs = msUntilDailyReset(ctx.dayNow ?? ctx.now, GEMINI_DAILY_RESET_ZONE);
    fields.disableReason = `per-day quota ${perDay} exhausted, until Gemini's daily reset at 00:00 ${GEMINI_DAILY_RESET_ZONE}`;
    fields.message = `per-day quota ${perDay} exhausted; key disabled until Gemini's daily reset at 00:00 ${GEMINI_DAILY_RESET_ZONE} (in ${hoursMinutes(fields.disableForMs)}): ${fields.message}`;
  }
  return buildFault(ctx, kind, fields);
}

/** The first per-day quota id of a Google `QuotaFailure` (`GenerateRequestsPerDayPerProjectPerModel-FreeTier`). */
function perDayQuotaId(f: ErrorFacts): string | undefined {
  const id = f.google?.quotaIds.find((q) => /PerDay/i.test(q));
  // The id comes off the wire into the endpoint's disabledReason (health rows, pages): one short line.
  if (id === undefined) return undefined;
  // Scrubbed before it is cut (a cut key could be too short for its shape to match), as `oneLine` does.
  const flat = scrubSecrets(id.replace(/\s+/g, ' ').trim());
  return flat.length > MAX_QUOTA_ID_CHARS ? `${flat.slice(0, MAX_QUOTA_ID_CHARS - 1)}…` : flat;
}

/** Longest quota id kept (Google's are about 50 characters: `GenerateRequestsPerDayPerProjectPerModel-FreeTier`). */
const MAX_QUOTA_ID_CHARS = 120;

function hoursMinutes(ms: number): string {
  const minutes = Math.ceil(ms / 60_000);
  const h = Math.floor(minutes / 60);
  return h > 0 ? `${h} h ${minutes % 60} min` : `${minutes} min`;
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
  // A stream that broke after its 200 (no end marker, a parser choking on a cut chunk): the connection failed, not
  // the provider. Before the body check: its own `code` would read as a provider's.
  if (is('StreamCutError')) return local('network');
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
  if (/<\/?(?:html|head|body|title|h1|center|hr|p)\b/i.test(text)) text = htmlSummary(text, f.status);
  return oneLine(text) || httpLine || kind;
}

/**
 * One line for an HTML error page (a proxy's 502): its `<title>` (else `<h1>`, else its text), with the
 * status in front once. The SDKs already prefix the status ("502 <html>…<title>502 Bad Gateway…"), and
 * the page repeats it in title and heading: said once, it reads "502 Bad Gateway".
 */
function htmlSummary(text: string, status: number | undefined): string {
  const heading =
    /<title[^>]*>([\s\S]*?)<\/title>/i.exec(text)?.[1] ?? /<h1[^>]*>([\s\S]*?)<\/h1>/i.exec(text)?.[1];
  let plain = (heading ?? text.replace(/^\s*\d{3}\s+(?=<)/, '')).replace(/<[^>]*>/g, ' ');
  plain = plain.replace(/\s+/g, ' ').trim();
  if (status !== undefined && !plain.startsWith(String(status))) plain = `${status} ${plain}`.trim();
  return plain;
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
  retryAfterCappedFromMs?: number;
  disableForMs?: number;
  disableReason?: string;
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
  if (fields.retryAfterCappedFromMs !== undefined)
    fault.retryAfterCappedFromMs = fields.retryAfterCappedFromMs;
  if (fields.disableForMs !== undefined) fault.disableForMs = fields.disableForMs;
  // The quota id comes from the provider's body: scrubbed like every other text from it.
  if (fields.disableReason !== undefined) fault.disableReason = oneLine(fields.disableReason);
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
