import { geminiCall } from './sdk-calls.ts';
import { gemini as G } from './wire-bodies.ts';
import { describeWireCases, type WireCase } from './wire-cases.ts';

// §6.4, Gemini-native column, through the real @google/genai 2.32 (no retryOptions). Its ApiError
// carries no headers, so the context holds what the adapter's fetch wrapper captured.

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => ({
  status,
  body,
  headers,
});
const sseChunk = (body: unknown) => `data: ${JSON.stringify(body)}\n\n`;

const cases: WireCase[] = [
  // ── credit / quota exhausted ──
  {
    name: 'g429-per-day-quota',
    reply: json(429, G.perDay),
    // 22:30 PST on 1 March (wall clock): Gemini's day turns over at 00:00 America/Los_Angeles, 1 h 30 min later.
    ctx: { now: Date.parse('2026-03-02T06:30:00Z') },
    expect: {
      kind: 'credit_exhausted',
      status: 429,
      code: 'RESOURCE_EXHAUSTED',
      disableForMs: 90 * 60_000,
      disableReason:
        "per-day quota GenerateRequestsPerDayPerProjectPerModel-FreeTier exhausted, until Gemini's daily reset at 00:00 America/Los_Angeles",
      message:
        /^per-day quota GenerateRequestsPerDayPerProjectPerModel-FreeTier exhausted; key disabled until Gemini's daily reset at 00:00 America\/Los_Angeles \(in 1 h 30 min\): You exceeded your current quota/,
    },
  },
  {
    // The id goes into the endpoint's disabledReason (health rows, pages): one line, the key scrubbed, bounded.
    name: 'g429-per-day-quota-hostile-id',
    reply: json(429, G.perDayHostileId),
    ctx: { now: Date.parse('2026-03-02T06:30:00Z') },
    expect: {
      kind: 'credit_exhausted',
      status: 429,
      code: 'RESOURCE_EXHAUSTED',
      disableForMs: 90 * 60_000,
      disableReason: `per-day quota GenerateRequestsPerDay key=AIza…0001 ${'X'.repeat(120 - 'GenerateRequestsPerDay key=AIza…0001 '.length - 1)}… exhausted, until Gemini's daily reset at 00:00 America/Los_Angeles`,
      message: /^per-day quota GenerateRequestsPerDay key=AIza…0001 X+… exhausted; key disabled until/,
    },
  },
  {
    name: 'g429-retry-delay-over-120s',
    reply: json(429, G.perMinuteLongDelay),
    expect: {
      kind: 'credit_exhausted',
      status: 429,
      code: 'RESOURCE_EXHAUSTED',
      message: /exceeded your current quota/,
    },
  },
  // ── rate-limited ──
  {
    name: 'g429-per-minute-retry-info',
    reply: json(429, G.perMinute),
    expect: {
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 1_204,
      code: 'RESOURCE_EXHAUSTED',
      message: /exceeded your current quota/,
    },
  },
  {
    name: 'g429-retry-in-message',
    reply: json(429, G.retryInMessage),
    expect: {
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 53_017,
      code: 'RESOURCE_EXHAUSTED',
      message: /Please retry in 53\.016342224s\.$/,
    },
  },
  {
    // Non-JSON content-type: genai wraps the raw text, giving the doubly-encoded form of §6.3.
    name: 'g429-doubly-encoded',
    reply: {
      status: 429,
      headers: { 'content-type': 'text/plain' },
      body: JSON.stringify(G.perMinute, null, 2),
    },
    expect: {
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 1_204,
      code: 'RESOURCE_EXHAUSTED',
      message: /exceeded your current quota/,
    },
  },
  {
    name: 'g200-stream-error-chunk',
    reply: { sse: [sseChunk(G.perMinute)] },
    call: { stream: true },
    expect: {
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 1_204,
      code: 'RESOURCE_EXHAUSTED',
      message: /exceeded your current quota/,
    },
  },
  // ── overloaded ──
  {
    name: 'g429-model-capacity',
    reply: json(429, G.capacity),
    expect: {
      kind: 'overloaded',
      status: 429,
      retryAfterMs: 8_000,
      code: 'MODEL_CAPACITY_EXHAUSTED',
      message: /^No capacity available for model gemini-2\.5-pro/,
    },
  },
  {
    name: 'g503-overloaded',
    reply: json(503, G.overloaded),
    expect: {
      kind: 'overloaded',
      status: 503,
      code: 'UNAVAILABLE',
      message: /^The model is overloaded\. Please try again later\.$/,
    },
  },
  {
    name: 'g503-high-demand',
    reply: json(503, G.highDemand),
    expect: { kind: 'overloaded', status: 503, code: 'UNAVAILABLE', message: /high demand/ },
  },
  // ── server error ──
  {
    name: 'g500-internal',
    reply: json(500, G.internal),
    expect: {
      kind: 'server_error',
      status: 500,
      code: 'INTERNAL',
      message: /^An internal error has occurred/,
    },
  },
  {
    name: 'g504-deadline',
    reply: json(504, G.deadline),
    expect: { kind: 'server_error', status: 504, code: 'DEADLINE_EXCEEDED', message: /^Deadline expired/ },
  },
  {
    name: 'g502-html',
    reply: {
      status: 502,
      headers: { 'content-type': 'text/html' },
      body: '<html><body><h1>502 Bad Gateway</h1></body></html>',
    },
    expect: { kind: 'server_error', status: 502, message: /^502 Bad Gateway$/ },
  },
  {
    name: 'g500-empty',
    reply: { status: 500 },
    expect: { kind: 'server_error', status: 500, message: /^HTTP 500 Internal Server Error$/ },
  },
  {
    // genai throws a bare SyntaxError (no status) on a truncated JSON body; the captured status decides.
    name: 'g500-truncated-json',
    reply: {
      status: 500,
      headers: { 'content-type': 'application/json' },
      body: '{"error":{"code":500,"mess',
    },
    expect: { kind: 'server_error', status: 500, message: /^Unterminated string in JSON/ },
  },
  {
    name: 'g500-truncated-json-sdk-only',
    reply: {
      status: 500,
      headers: { 'content-type': 'application/json' },
      body: '{"error":{"code":500,"mess',
    },
    noCapture: true,
    expect: { kind: 'server_error', message: /^Unterminated string in JSON/ },
  },
  // ── network ──
  {
    name: 'g-refused',
    target: 'refused',
    expect: {
      kind: 'network',
      code: 'ECONNREFUSED',
      message: /^fetch failed \(connect ECONNREFUSED 127\.0\.0\.1:\d+\)$/,
    },
  },
  {
    name: 'g-reset',
    reply: { action: 'destroy' },
    expect: { kind: 'network', code: 'UND_ERR_SOCKET', message: /^fetch failed/ },
  },
  {
    name: 'g-notfound',
    target: 'notfound',
    expect: {
      kind: 'network',
      code: 'ENOTFOUND',
      message: /^fetch failed \(getaddrinfo ENOTFOUND api\.breakwater\.invalid\)$/,
    },
  },
  // ── timeout ──
  {
    name: 'g-sdk-timeout',
    reply: { action: 'hang' },
    call: { timeout: 100 },
    expect: { kind: 'timeout', message: /aborted/i },
  },
  {
    name: 'g-adapter-deadline',
    reply: { action: 'hang' },
    call: { abortOnArrival: true },
    ctx: { timedOut: 'headers' },
    expect: { kind: 'timeout', message: /aborted/i },
  },
  // ── auth ──
  {
    name: 'g400-api-key-invalid',
    reply: json(400, G.badKey),
    expect: {
      kind: 'auth',
      status: 400,
      code: 'API_KEY_INVALID',
      message: /^API key not valid\. Please pass a valid API key\.$/,
    },
  },
  {
    name: 'g403-permission-denied',
    reply: json(403, G.permission),
    expect: { kind: 'auth', status: 403, code: 'PERMISSION_DENIED', message: /Permission denied/ },
  },
  // ── bad request ──
  {
    name: 'g400-invalid-argument',
    reply: json(400, G.invalid),
    expect: {
      kind: 'bad_request',
      status: 400,
      code: 'INVALID_ARGUMENT',
      message: /contents is not specified$/,
    },
  },
  {
    name: 'g404-not-found',
    reply: json(404, G.notFound),
    expect: { kind: 'bad_request', status: 404, code: 'NOT_FOUND', message: /models\/gemini-9 is not found/ },
  },
  // ── cancelled ──
  {
    name: 'g-caller-abort',
    reply: { action: 'hang' },
    call: { abortOnArrival: true },
    ctx: { callerAborted: true },
    expect: { kind: 'cancelled', message: /aborted/i },
  },
];

describeWireCases(
  'classifyError × @google/genai (§6.4 Gemini column)',
  { provider: 'gemini', baseURL: (u) => u, call: geminiCall, captured: 'always' },
  cases,
);
