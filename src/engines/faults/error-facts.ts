import { parseProtoDuration } from '../wire/retry-after.ts';

/**
 * The facts a classifier needs, read from whatever was thrown: an `@anthropic-ai/sdk` (0.x or 1.x)
 * or `openai` `APIError`, an `@google/genai` `ApiError` (whose message is the JSON body), a raw
 * `TypeError: fetch failed`, an `AbortError`, or anything else. Reading never throws and never
 * relies on `instanceof` (two copies of an SDK, or an older major, must classify the same).
 */
export interface ErrorFacts {
  /** `err.name` plus every constructor name on the prototype chain (`APIConnectionTimeoutError`, …). */
  readonly names: ReadonlySet<string>;
  /** HTTP status (400–599) when there was an error response. */
  readonly status?: number;
  readonly headers?: Headers;
  /** Anthropic `error.type` / OpenAI `error.type`. */
  readonly type?: string;
  /** Anthropic `error.details.error_code` / OpenAI `error.code` (string form only). */
  readonly errorCode?: string;
  /** The provider's own message from the body, when a body was readable. */
  readonly apiMessage?: string;
  /** An HTTP reason phrase found in the body (genai puts `statusText` there for non-JSON bodies). */
  readonly statusText?: string;
  /** `err.message` (or `String(err)`). */
  readonly message: string;
  /** `err.requestID`, then the body's `request_id`. Headers are read by the classifier. */
  readonly requestId?: string;
  /** The first connection error code in the cause chain (`ECONNREFUSED`, `UND_ERR_SOCKET`, …). */
  readonly causeCode?: string;
  /** The first cause's message (`connect ECONNREFUSED 127.0.0.1:4000`). */
  readonly causeMessage?: string;
  /** True when the error carried a provider error body or type (a stream error has no status but has this). */
  readonly hasProviderBody: boolean;
  /** Google-style `{error:{code,status,details}}` facts (Gemini native, Gemini's compat array). */
  readonly google?: GoogleErrorFacts;
}

/** What a `google.rpc.Status` error body says. */
export interface GoogleErrorFacts {
  /** gRPC status name: `RESOURCE_EXHAUSTED`, `UNAVAILABLE`, `INVALID_ARGUMENT`, … */
  readonly status?: string;
  /** `ErrorInfo.reason` values (`API_KEY_INVALID`, `MODEL_CAPACITY_EXHAUSTED`) and Vertex `errors[].reason`. */
  readonly reasons: readonly string[];
  /** `QuotaFailure.violations[].quotaId` values (`GenerateRequestsPerDayPerProjectPerModel-FreeTier`). */
  readonly quotaIds: readonly string[];
  /** `RetryInfo.retryDelay` in ms. */
  readonly retryDelayMs?: number;
}

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v.length > 0 ? v : undefined);

/** Parses JSON found inside `text` (whole, or from the first `{`/`[`, as in genai's `got status: …. {…}`). */
function parseEmbeddedJson(text: string | undefined): unknown {
  if (!text) return undefined;
  const trimmed = text.trim();
  const tryParse = (s: string): unknown => {
    try {
      return JSON.parse(s);
    } catch {
      return undefined;
    }
  };
  const whole = tryParse(trimmed);
  if (whole !== undefined && typeof whole === 'object') return whole;
  const at = trimmed.search(/[[{]/);
  return at > 0 ? tryParse(trimmed.slice(at)) : undefined;
}

/**
 * Finds the provider's inner error object in a body: Anthropic `{type:'error', error:{…}}`,
 * OpenAI `{error:{…}}` or the already-unwrapped inner object, Gemini `{error:{code,status,…}}`,
 * Gemini-compat `[{error:{…}}]`, Ollama native `{error:"…"}`. genai wraps a non-JSON error body as
 * `{error:{message:"<raw text>"}}`; when that raw text is itself a JSON body it is unwrapped too.
 */
function innerError(body: unknown, depth = 0): { inner?: Obj; requestId?: string } {
  if (depth > 3) return {};
  if (Array.isArray(body)) return innerError(body[0], depth + 1);
  if (!isObj(body)) return {};
  const requestId = str(body.request_id);
  const withId = (r: { inner?: Obj; requestId?: string }) =>
    requestId && !r.requestId ? { ...r, requestId } : r;
  if (isObj(body.error)) {
    const nested = parseEmbeddedJson(str(body.error.message));
    if (nested && typeof nested === 'object') {
      const deeper = innerError(nested, depth + 1);
      if (deeper.inner) return withId(deeper);
    }
    return withId({ inner: body.error });
  }
  if (typeof body.error === 'string') return withId({ inner: { message: body.error } });
  if ('message' in body || 'type' in body || 'code' in body) return withId({ inner: body });
  return withId({});
}

function googleFacts(inner: Obj): GoogleErrorFacts | undefined {
  const status = str(inner.status);
  const details = Array.isArray(inner.details) ? inner.details : [];
  const hasGoogleShape =
    (status !== undefined && /^[A-Z_]+$/.test(status)) || details.some((d) => isObj(d) && '@type' in d);
  if (!hasGoogleShape) return undefined;
  const reasons: string[] = [];
  const quotaIds: string[] = [];
  let retryDelayMs: number | undefined;
  for (const d of details) {
    if (!isObj(d)) continue;
    const kind = String(d['@type'] ?? '');
    if (kind.endsWith('ErrorInfo') && str(d.reason)) reasons.push(d.reason as string);
    if (kind.endsWith('QuotaFailure') && Array.isArray(d.violations)) {
      for (const v of d.violations) if (isObj(v) && str(v.quotaId)) quotaIds.push(v.quotaId as string);
    }
    if (kind.endsWith('RetryInfo')) retryDelayMs = protoDelay(d.retryDelay) ?? retryDelayMs;
  }
  if (Array.isArray(inner.errors)) {
    for (const e of inner.errors) if (isObj(e) && str(e.reason)) reasons.push(e.reason as string);
  }
  const facts: { status?: string; reasons: string[]; quotaIds: string[]; retryDelayMs?: number } = {
    reasons,
    quotaIds,
  };
  if (status && /^[A-Z_]+$/.test(status)) facts.status = status;
  if (retryDelayMs !== undefined) facts.retryDelayMs = retryDelayMs;
  return facts;
}

function protoDelay(v: unknown): number | undefined {
  if (typeof v === 'string') return parseProtoDuration(v);
  if (isObj(v)) {
    const seconds = Number(v.seconds ?? 0);
    const nanos = Number(v.nanos ?? 0);
    if (Number.isFinite(seconds) && Number.isFinite(nanos)) return Math.ceil(seconds * 1000 + nanos / 1e6);
  }
  return undefined;
}

function prototypeNames(err: unknown): Set<string> {
  const names = new Set<string>();
  if (!isObj(err) && typeof err !== 'function') return names;
  const own = (err as { name?: unknown }).name;
  if (typeof own === 'string') names.add(own);
  for (let p = Object.getPrototypeOf(err); p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    const ctorName = (p as { constructor?: { name?: unknown } }).constructor?.name;
    if (typeof ctorName === 'string' && ctorName) names.add(ctorName);
  }
  return names;
}

const CONNECTION_CODE = /^(?:E[A-Z]{3,}|UND_ERR_[A-Z_]+|ERR_(?:SOCKET|STREAM|HTTP)[A-Z_]*)$/;

/** Walks `cause` (and `AggregateError.errors`) for the first system/undici error code. */
function causeFacts(err: unknown): { code?: string; message?: string } {
  const seen = new Set<unknown>();
  const queue: unknown[] = [err];
  let message: string | undefined;
  while (queue.length > 0 && seen.size < 12) {
    const e = queue.shift();
    if (!isObj(e) || seen.has(e)) continue;
    seen.add(e);
    if (e !== err) message ??= str(e.message);
    if (typeof e.code === 'string' && CONNECTION_CODE.test(e.code)) {
      const own = e !== err ? str(e.message) : undefined;
      const msg = own ?? message;
      return msg ? { code: e.code, message: msg } : { code: e.code };
    }
    if ('cause' in e) queue.push(e.cause);
    if (Array.isArray(e.errors)) queue.push(...e.errors);
  }
  return message ? { message } : {};
}

function toHeaders(v: unknown): Headers | undefined {
  if (v instanceof Headers) return v;
  if (isObj(v) && typeof v.get === 'function' && typeof v.has === 'function') return v as unknown as Headers;
  if (isObj(v)) {
    // 0.x-era SDKs exposed headers as a plain record.
    try {
      const h = new Headers();
      for (const [k, val] of Object.entries(v)) if (typeof val === 'string') h.set(k, val);
      return h;
    } catch {
      return undefined;
    }
  }
  return undefined;
}

/**
 * Reads {@link ErrorFacts} from anything thrown. `fallbackHeaders` / `fallbackBody` /
 * `fallbackStatus` are what the adapter's fetch wrapper captured; the error's own win when it has them.
 *
 * @example
 * ```ts
 * const facts = readErrorFacts(err, ctx.headers, ctx.bodyText);
 * if (facts.status === 529 || facts.type === 'overloaded_error') …
 * ```
 */
export function readErrorFacts(
  err: unknown,
  fallbackHeaders?: Headers,
  fallbackBody?: string,
  fallbackStatus?: number,
): ErrorFacts {
  const e: Obj = isObj(err) ? err : {};
  const names = prototypeNames(err);
  const message =
    typeof err === 'string'
      ? err
      : (str(e.message) ?? (err === undefined || err === null ? String(err) : safeString(err)));

  const isHttpError = (v: unknown): v is number =>
    typeof v === 'number' && Number.isInteger(v) && v >= 400 && v <= 599;
  // genai throws a bare SyntaxError on a truncated JSON error body: the status survives only in the adapter's capture.
  const status = isHttpError(e.status) ? e.status : isHttpError(fallbackStatus) ? fallbackStatus : undefined;

  // Where the body may be: the SDK's parsed `error`, the message (genai), the captured body text.
  let found = innerError(e.error);
  if (!found.inner) found = innerError(parseEmbeddedJson(message));
  if (!found.inner && fallbackBody) found = innerError(parseEmbeddedJson(fallbackBody));
  // Gemini-compat: the OpenAI SDK lost the array body, but the adapter captured it.
  let google = found.inner ? googleFacts(found.inner) : undefined;
  if (!google && fallbackBody) {
    const captured = innerError(parseEmbeddedJson(fallbackBody));
    if (captured.inner) {
      google = googleFacts(captured.inner);
      if (google && !found.inner) found = captured;
    }
  }
  const inner = found.inner ?? {};

  const type = str(e.type) ?? str(inner.type);
  const innerDetails = isObj(inner.details) ? inner.details : undefined;
  const errorCode =
    str(e.errorCode) ??
    str(innerDetails?.error_code) ??
    (typeof e.code === 'string' && !CONNECTION_CODE.test(e.code) ? e.code : undefined) ??
    str(inner.code);
  const apiMessage = str(e.apiMessage) ?? str(inner.message);
  const requestId = str(e.requestID) ?? found.requestId;
  const cause = causeFacts(err);
  const headers = toHeaders(e.headers) ?? fallbackHeaders;

  const facts: {
    -readonly [K in keyof ErrorFacts]: ErrorFacts[K];
  } = {
    names,
    message,
    hasProviderBody: found.inner !== undefined || type !== undefined || errorCode !== undefined,
  };
  if (status !== undefined) facts.status = status;
  if (headers) facts.headers = headers;
  if (type) facts.type = type;
  if (errorCode) facts.errorCode = errorCode;
  if (apiMessage) facts.apiMessage = apiMessage;
  const statusText = str(inner.status);
  if (statusText && !google?.status && /^[A-Za-z][A-Za-z ]*$/.test(statusText)) facts.statusText = statusText;
  if (requestId) facts.requestId = requestId;
  if (cause.code) facts.causeCode = cause.code;
  if (cause.message) facts.causeMessage = cause.message;
  if (google) facts.google = google;
  return facts;
}

function safeString(v: unknown): string {
  try {
    if (typeof v === 'object') return JSON.stringify(v) ?? String(v);
    return String(v);
  } catch {
    return Object.prototype.toString.call(v);
  }
}
