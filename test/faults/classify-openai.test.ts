import { openaiCall } from './sdk-calls.ts';
import { openai as O, openaiStreamError, openaiStreamRateLimit } from './wire-bodies.ts';
import { describeWireCases, type WireCase } from './wire-cases.ts';

// §6.4, OpenAI column, through the real openai 6.49 SDK (maxRetries: 0).

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => ({
  status,
  body,
  headers,
});
const xid = (id: string) => ({ 'x-request-id': id });

const BILLING_CODES = [
  'credit_balance_exhausted',
  'organization_usage_limit_exceeded',
  'organization_spend_limit_exceeded',
  'project_spend_limit_exceeded',
];

const ECHOED_KEY = 'sk-proj-EchoedKeyABCDEFGHIJKLMNOPQRSTUVWX7777';

const cases: WireCase[] = [
  // ── credit / quota exhausted ──
  {
    name: 'o429-insufficient-quota',
    reply: json(429, O.quota, xid('req_quota1')),
    expect: {
      kind: 'credit_exhausted',
      status: 429,
      requestId: 'req_quota1',
      code: 'insufficient_quota',
      message: /^You exceeded your current quota, please check your plan and billing details\./,
    },
  },
  {
    name: 'o429-insufficient-quota-code-null',
    reply: json(429, O.quotaOld, xid('req_quota2')),
    expect: {
      kind: 'credit_exhausted',
      status: 429,
      requestId: 'req_quota2',
      code: 'insufficient_quota',
      message: /exceeded your current quota/,
    },
  },
  {
    // Quota with a retry-after must still not be a rate limit, and carries no retry time.
    name: 'o429-insufficient-quota-with-retry-after',
    reply: json(429, O.quota, { ...xid('req_quota3'), 'retry-after': '20' }),
    expect: {
      kind: 'credit_exhausted',
      status: 429,
      requestId: 'req_quota3',
      code: 'insufficient_quota',
      message: /exceeded your current quota/,
    },
  },
  ...BILLING_CODES.map(
    (code): WireCase => ({
      name: `o429-${code}`,
      reply: json(429, O.billing(code), xid(`req_${code}`)),
      expect: {
        kind: 'credit_exhausted',
        status: 429,
        requestId: `req_${code}`,
        code,
        message: /Billing limit reached/,
      },
    }),
  ),
  // ── rate-limited ──
  {
    name: 'o429-tpm-message-delay',
    reply: json(429, O.tpm, xid('req_tpm')),
    expect: {
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 1_574,
      requestId: 'req_tpm',
      code: 'rate_limit_exceeded',
      message: /^Rate limit reached for o4-mini .* Please try again in 1\.574s\./,
    },
  },
  {
    name: 'o429-rpm-retry-after-ms',
    reply: json(429, O.rpm, { ...xid('req_rpm'), 'retry-after-ms': '300', 'retry-after': '1' }),
    expect: {
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 300,
      requestId: 'req_rpm',
      code: 'rate_limit_exceeded',
      message: /requests per min \(RPM\)/,
    },
  },
  {
    name: 'o429-retry-after-seconds',
    reply: json(429, O.rpm, { ...xid('req_rpm2'), 'retry-after': '7' }),
    expect: {
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 7_000,
      requestId: 'req_rpm2',
      code: 'rate_limit_exceeded',
      message: /RPM/,
    },
  },
  {
    name: 'o429-x-ratelimit-reset',
    reply: json(429, O.tpm, {
      ...xid('req_reset'),
      'x-ratelimit-limit-requests': '60',
      'x-ratelimit-remaining-requests': '59',
      'x-ratelimit-reset-requests': '1s',
      'x-ratelimit-limit-tokens': '150000',
      'x-ratelimit-remaining-tokens': '0',
      'x-ratelimit-reset-tokens': '6m0s',
    }),
    expect: {
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 360_000,
      requestId: 'req_reset',
      code: 'rate_limit_exceeded',
      message: /TPM/,
    },
  },
  {
    name: 'o200-stream-rate-limit',
    reply: { sse: openaiStreamRateLimit, headers: xid('req_stream_rl') },
    call: { stream: true },
    expect: {
      kind: 'rate_limited',
      retryAfterMs: 20,
      requestId: 'req_stream_rl',
      code: 'rate_limit_exceeded',
      message: /Please try again in 20ms/,
    },
  },
  // ── "Request too large" is no rate limit: no wait makes it fit this endpoint, another may take it ──
  {
    name: 'o429-request-too-large',
    reply: json(429, O.tooLarge, xid('req_large')),
    expect: {
      kind: 'request_too_large',
      status: 429,
      requestId: 'req_large',
      code: 'rate_limit_exceeded',
      message: /^Request too large for gpt-4o/,
    },
  },
  // ── overloaded ──
  {
    name: 'o503-engine-overloaded',
    reply: json(503, O.overloaded, xid('req_503')),
    expect: {
      kind: 'overloaded',
      status: 503,
      requestId: 'req_503',
      code: 'server_error',
      message: /^The engine is currently overloaded, please try again later\.$/,
    },
  },
  {
    name: 'o503-retry-after',
    reply: json(503, O.overloaded, { ...xid('req_503b'), 'retry-after': '2' }),
    expect: {
      kind: 'overloaded',
      status: 503,
      retryAfterMs: 2_000,
      requestId: 'req_503b',
      code: 'server_error',
      message: /overloaded/,
    },
  },
  // ── server error ──
  {
    name: 'o500-server-error',
    reply: json(500, O.server, xid('req_500')),
    expect: {
      kind: 'server_error',
      status: 500,
      requestId: 'req_500',
      code: 'server_error',
      message: /^The server had an error while processing your request\. Sorry about that!$/,
    },
  },
  {
    name: 'o502-html',
    reply: { status: 502, headers: { 'content-type': 'text/html' }, body: '<html>Bad gateway</html>' },
    expect: { kind: 'server_error', status: 502, message: /^502 Bad gateway$/ },
  },
  {
    name: 'o504-gateway-timeout',
    reply: { status: 504, headers: { 'content-type': 'text/plain' }, body: 'upstream request timeout' },
    expect: { kind: 'server_error', status: 504, message: /^504 upstream request timeout$/ },
  },
  {
    name: 'o500-truncated-json',
    reply: {
      status: 500,
      headers: { 'content-type': 'application/json' },
      body: '{"error":{"message":"The ser',
    },
    expect: { kind: 'server_error', status: 500, message: /^500 \{"error":\{"message":"The ser$/ },
  },
  {
    name: 'o200-stream-server-error',
    reply: { sse: openaiStreamError, headers: xid('req_stream') },
    call: { stream: true },
    expect: {
      kind: 'server_error',
      requestId: 'req_stream',
      code: 'server_error',
      message: /^The server had an error while processing your request/,
    },
  },
  // ── network ──
  {
    name: 'o-refused',
    target: 'refused',
    expect: { kind: 'network', code: 'ECONNREFUSED', message: /^Connection error\. \(connect ECONNREFUSED/ },
  },
  {
    name: 'o-reset',
    reply: { action: 'destroy' },
    expect: { kind: 'network', code: 'UND_ERR_SOCKET', message: /^Connection error\./ },
  },
  {
    name: 'o-notfound',
    target: 'notfound',
    expect: { kind: 'network', code: 'ENOTFOUND', message: /ENOTFOUND/ },
  },
  // ── timeout ──
  {
    name: 'o-sdk-timeout',
    reply: { action: 'hang' },
    call: { timeout: 100 },
    expect: { kind: 'timeout', message: /^Request timed out\.$/ },
  },
  {
    name: 'o-adapter-deadline',
    reply: { action: 'hang' },
    call: { abortOnArrival: true },
    ctx: { timedOut: 'idle' },
    expect: { kind: 'timeout', message: /aborted/i },
  },
  // ── auth ──
  {
    name: 'o401-invalid-key',
    reply: json(401, O.badKey, xid('req_401')),
    expect: {
      kind: 'auth',
      status: 401,
      requestId: 'req_401',
      code: 'invalid_api_key',
      message: /^Incorrect API key provided: sk-…XXXX\./,
    },
  },
  {
    // The body echoes the full key the client sent: the fault must hold only its masked form.
    name: 'o401-echoed-key',
    reply: json(401, O.badKeyEcho(ECHOED_KEY), xid('req_401b')),
    call: { apiKey: ECHOED_KEY },
    secrets: [ECHOED_KEY, 'EchoedKeyABCDEFGHIJKLMNOPQRSTUVWX'],
    expect: {
      kind: 'auth',
      status: 401,
      requestId: 'req_401b',
      code: 'invalid_api_key',
      message: /^Incorrect API key provided: sk-proj-…7777\. You can find your API key/,
    },
  },
  {
    name: 'o403-permission',
    reply: json(403, O.permission, xid('req_403')),
    expect: {
      kind: 'auth',
      status: 403,
      requestId: 'req_403',
      code: 'invalid_request_error',
      message: /not allowed/,
    },
  },
  // ── bad request ──
  {
    name: 'o400-invalid',
    reply: json(400, O.invalid, xid('req_400')),
    expect: {
      kind: 'bad_request',
      status: 400,
      requestId: 'req_400',
      code: 'invalid_value',
      message: /temperature/,
    },
  },
  {
    name: 'o404-model',
    reply: json(404, O.notFound, xid('req_404')),
    expect: {
      kind: 'bad_request',
      status: 404,
      requestId: 'req_404',
      code: 'model_not_found',
      message: /gpt-9/,
    },
  },
  {
    name: 'o422-unprocessable',
    reply: json(422, O.unprocessable, xid('req_422')),
    expect: {
      kind: 'bad_request',
      status: 422,
      requestId: 'req_422',
      code: 'invalid_request_error',
      message: /^Unprocessable entity$/,
    },
  },
  // ── cancelled ──
  {
    name: 'o-caller-abort',
    reply: { action: 'hang' },
    call: { abortOnArrival: true },
    ctx: { callerAborted: true },
    expect: { kind: 'cancelled', message: /aborted/i },
  },
  {
    name: 'o-user-abort-no-context',
    reply: { action: 'hang' },
    call: { abortOnArrival: true },
    expect: { kind: 'cancelled', message: /aborted/i },
  },
];

describeWireCases(
  'classifyError × openai (§6.4 OpenAI column)',
  { provider: 'openai', baseURL: (u) => `${u}/v1`, call: openaiCall, captured: 'both' },
  cases,
);
