import { anthropicCall } from './sdk-calls.ts';
import { anthropic as A, anthropicRateLimitHeaders, anthropicStreamOverloaded } from './wire-bodies.ts';
import { describeWireCases, type WireCase } from './wire-cases.ts';

// §6.4, Anthropic column, through the real @anthropic-ai/sdk 1.14 (maxRetries: 0).

const RESET = '2025-08-21T12:40:59Z';
const HTTP_DATE = 'Wed, 21 Oct 2026 07:28:00 GMT';
const json = (status: number, body: unknown, headers: Record<string, string> = {}) => ({
  status,
  body,
  headers,
});
const rid = (id: string) => ({ 'request-id': id });

const cases: WireCase[] = [
  // ── credit / quota exhausted ──
  {
    name: 'a400-credit-balance',
    reply: json(400, A.creditTooLow, rid('req_011CbrFTcXhtiMzr3s6EocF7')),
    expect: {
      kind: 'credit_exhausted',
      status: 400,
      requestId: 'req_011CbrFTcXhtiMzr3s6EocF7',
      code: 'invalid_request_error',
      message: /^Your credit balance is too low to access the Anthropic API\./,
    },
  },
  {
    name: 'a400-usage-limits',
    reply: json(400, A.usageLimits, rid('req_011UsageLimits')),
    expect: {
      kind: 'credit_exhausted',
      status: 400,
      requestId: 'req_011UsageLimits',
      code: 'invalid_request_error',
      message: /specified API usage limits/,
    },
  },
  {
    name: 'a402-billing',
    reply: json(402, A.billing, rid('req_011Billing')),
    expect: {
      kind: 'credit_exhausted',
      status: 402,
      requestId: 'req_011Billing',
      code: 'billing_error',
      message: /billing or payment information/,
    },
  },
  {
    name: 'a429-enforced-spend',
    reply: json(429, A.spendLimit, { ...rid('req_011Spend'), 'x-should-retry': 'false' }),
    expect: {
      kind: 'credit_exhausted',
      status: 429,
      requestId: 'req_011Spend',
      code: 'enforced_spend_limit_reached',
      message: /monthly spend limit/,
    },
  },
  {
    name: 'a429-contract-spend',
    reply: json(429, A.contractSpend, { ...rid('req_011Contract'), 'x-should-retry': 'false' }),
    expect: {
      kind: 'credit_exhausted',
      status: 429,
      requestId: 'req_011Contract',
      code: 'contract_spend_limit_reached',
      message: /contract spend limit/,
    },
  },
  {
    name: 'a429-spend-text-no-retry-after',
    reply: json(429, A.spendLimitNoCode, rid('req_011SpendText')),
    expect: {
      kind: 'credit_exhausted',
      status: 429,
      requestId: 'req_011SpendText',
      code: 'rate_limit_error',
      message: /spend limit/,
    },
  },
  // ── rate-limited ──
  {
    name: 'a429-retry-after',
    reply: json(429, A.rateLimit, anthropicRateLimitHeaders),
    expect: {
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 12_000,
      requestId: 'req_011TEST',
      code: 'rate_limit_error',
      message: /^This request would exceed your organization's rate limit of 50,000 input tokens per minute/,
    },
  },
  {
    // The spend-limit wording only means credit when retry-after is absent.
    name: 'a429-spend-text-with-retry-after',
    reply: json(429, A.spendLimitNoCode, { ...rid('req_011SpendText'), 'retry-after': '30' }),
    expect: {
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 30_000,
      requestId: 'req_011SpendText',
      code: 'rate_limit_error',
      message: /spend limit/,
    },
  },
  {
    name: 'a429-ramp',
    reply: json(429, A.ramp, { ...rid('req_011Ramp'), 'retry-after': '5' }),
    expect: {
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 5_000,
      requestId: 'req_011Ramp',
      code: 'ramp_limit_exceeded',
      message: /ramping up/,
    },
  },
  {
    // The 2024 dump (anthropic-sdk-typescript#357): x-should-retry but no retry-after.
    name: 'a429-no-retry-after',
    reply: json(429, A.rateLimitShort, { ...rid('req_011Short'), 'x-should-retry': 'true' }),
    expect: {
      kind: 'rate_limited',
      status: 429,
      requestId: 'req_011Short',
      code: 'rate_limit_error',
      message: /^Rate limited$/,
    },
  },
  {
    name: 'a429-reset-header-only',
    reply: json(429, A.rateLimitShort, {
      ...rid('req_011Short'),
      'anthropic-ratelimit-input-tokens-remaining': '0',
      'anthropic-ratelimit-input-tokens-reset': RESET,
      'anthropic-ratelimit-requests-remaining': '10',
      'anthropic-ratelimit-requests-reset': '2025-08-21T12:45:00Z',
    }),
    ctx: { now: Date.parse(RESET) - 20_000 },
    expect: {
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 20_000,
      requestId: 'req_011Short',
      code: 'rate_limit_error',
      message: /^Rate limited$/,
    },
  },
  {
    name: 'a429-retry-after-http-date',
    reply: json(429, A.rateLimitShort, { ...rid('req_011Short'), 'retry-after': HTTP_DATE }),
    ctx: { now: Date.parse(HTTP_DATE) - 30_000 },
    expect: {
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 30_000,
      requestId: 'req_011Short',
      code: 'rate_limit_error',
      message: /^Rate limited$/,
    },
  },
  {
    name: 'a429-retry-after-ms',
    reply: json(429, A.rateLimitShort, {
      ...rid('req_011Short'),
      'retry-after-ms': '1500',
      'retry-after': '2',
    }),
    expect: {
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 1_500,
      requestId: 'req_011Short',
      code: 'rate_limit_error',
      message: /^Rate limited$/,
    },
  },
  // ── overloaded ──
  {
    name: 'a529-overloaded',
    reply: json(529, A.overloaded, rid('req_011X')),
    expect: {
      kind: 'overloaded',
      status: 529,
      requestId: 'req_011X',
      code: 'overloaded_error',
      message: /^Overloaded$/,
    },
  },
  {
    name: 'a529-overloaded-retry-after',
    reply: json(529, A.overloaded, { ...rid('req_011X'), 'retry-after': '3' }),
    expect: {
      kind: 'overloaded',
      status: 529,
      retryAfterMs: 3_000,
      requestId: 'req_011X',
      code: 'overloaded_error',
      message: /^Overloaded$/,
    },
  },
  {
    name: 'a200-stream-error-overloaded',
    reply: { sse: anthropicStreamOverloaded, headers: rid('req_011Stream') },
    call: { stream: true },
    expect: {
      kind: 'overloaded',
      requestId: 'req_011Stream',
      code: 'overloaded_error',
      message: /^Overloaded$/,
    },
  },
  {
    name: 'a503-unavailable',
    reply: json(503, A.unavailable, rid('req_011Unavailable')),
    expect: {
      kind: 'overloaded',
      status: 503,
      requestId: 'req_011Unavailable',
      code: 'api_error',
      message: /Service Unavailable/,
    },
  },
  // ── server error ──
  {
    name: 'a500-api-error',
    reply: json(500, A.internal, rid('req_011Internal')),
    expect: {
      kind: 'server_error',
      status: 500,
      requestId: 'req_011Internal',
      code: 'api_error',
      message: /^Internal server error$/,
    },
  },
  {
    name: 'a502-html',
    reply: {
      status: 502,
      headers: { 'content-type': 'text/html' },
      body: '<html><body><h1>502 Bad Gateway</h1></body></html>',
    },
    expect: { kind: 'server_error', status: 502, message: /^502 Bad Gateway$/ },
  },
  {
    name: 'a504-timeout-error',
    reply: json(504, A.timeout, rid('req_011Timeout')),
    expect: {
      kind: 'server_error',
      status: 504,
      requestId: 'req_011Timeout',
      code: 'timeout_error',
      message: /timed out while processing/,
    },
  },
  {
    name: 'a500-empty-body',
    reply: { status: 500, headers: rid('req_011Empty') },
    expect: {
      kind: 'server_error',
      status: 500,
      requestId: 'req_011Empty',
      message: /^500 status code \(no body\)$/,
    },
  },
  {
    name: 'a500-truncated-json',
    reply: {
      status: 500,
      headers: { 'content-type': 'application/json' },
      body: '{"type":"error","error":{"type":"api_e',
    },
    expect: { kind: 'server_error', status: 500, message: /^500 \{"type":"error"/ },
  },
  // ── network ──
  {
    name: 'a-refused',
    target: 'refused',
    expect: {
      kind: 'network',
      code: 'ECONNREFUSED',
      message: /^Connection error\. \(connect ECONNREFUSED 127\.0\.0\.1:\d+\)$/,
    },
  },
  {
    name: 'a-reset',
    reply: { action: 'destroy' },
    expect: { kind: 'network', code: 'UND_ERR_SOCKET', message: /^Connection error\./ },
  },
  {
    name: 'a-notfound',
    target: 'notfound',
    expect: { kind: 'network', code: 'ENOTFOUND', message: /getaddrinfo ENOTFOUND api\.breakwater\.invalid/ },
  },
  // ── timeout ──
  {
    name: 'a-sdk-timeout',
    reply: { action: 'hang' },
    call: { timeout: 100 },
    expect: { kind: 'timeout', message: /^Request timed out\.$/ },
  },
  {
    name: 'a-adapter-deadline',
    reply: { action: 'hang' },
    call: { abortOnArrival: true },
    ctx: { timedOut: 'headers', callerAborted: true },
    expect: { kind: 'timeout', message: /aborted/i },
  },
  // ── auth ──
  {
    name: 'a401-auth',
    reply: json(401, A.badKey, rid('req_011Auth')),
    expect: {
      kind: 'auth',
      status: 401,
      requestId: 'req_011Auth',
      code: 'authentication_error',
      message: /^invalid x-api-key$/,
    },
  },
  {
    name: 'a403-permission',
    reply: json(403, A.permission, rid('req_011Perm')),
    expect: {
      kind: 'auth',
      status: 403,
      requestId: 'req_011Perm',
      code: 'permission_error',
      message: /permission/,
    },
  },
  // ── bad request ──
  {
    name: 'a400-invalid',
    reply: json(400, A.invalid, rid('req_011Invalid')),
    expect: {
      kind: 'bad_request',
      status: 400,
      requestId: 'req_011Invalid',
      code: 'invalid_request_error',
      message: /^messages: field required$/,
    },
  },
  {
    name: 'a404-not-found',
    reply: json(404, A.notFound, rid('req_011NotFound')),
    expect: {
      kind: 'bad_request',
      status: 404,
      requestId: 'req_011NotFound',
      code: 'not_found_error',
      message: /claude-nope/,
    },
  },
  {
    name: 'a422-unprocessable',
    reply: json(422, A.invalid, rid('req_011Invalid')),
    expect: {
      kind: 'bad_request',
      status: 422,
      requestId: 'req_011Invalid',
      code: 'invalid_request_error',
      message: /field required/,
    },
  },
  {
    name: 'a413-too-large',
    reply: json(413, A.tooLarge),
    // No request-id header (Cloudflare answered): the id comes from the body's request_id.
    expect: {
      kind: 'bad_request',
      status: 413,
      requestId: 'req_011Large',
      code: 'request_too_large',
      message: /maximum allowed number of bytes/,
    },
  },
  // ── cancelled ──
  {
    name: 'a-caller-abort',
    reply: { action: 'hang' },
    call: { abortOnArrival: true },
    ctx: { callerAborted: true },
    expect: { kind: 'cancelled', message: /aborted/i },
  },
  {
    name: 'a-user-abort-no-context',
    reply: { action: 'hang' },
    call: { abortOnArrival: true },
    expect: { kind: 'cancelled', message: /aborted/i },
  },
];

describeWireCases(
  'classifyError × @anthropic-ai/sdk (§6.4 Anthropic column)',
  { provider: 'anthropic', baseURL: (u) => u, call: anthropicCall, captured: 'both' },
  cases,
);
