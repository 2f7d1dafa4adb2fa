import { openaiCall } from './sdk-calls.ts';
import { compat as C } from './wire-bodies.ts';
import { describeWireCases, type WireCase } from './wire-cases.ts';

// §6.4, "OpenAI-compatible" cells: Gemini's compat endpoint (array-wrapped errors), Ollama and vLLM,
// all through the real openai SDK, with the headers/bodyText the adapter's fetch wrapper captures.

const json = (status: number, body: unknown, headers: Record<string, string> = {}) => ({
  status,
  body,
  headers,
});

const geminiCompat: WireCase[] = [
  {
    name: 'gc429-array',
    reply: json(429, C.geminiArray429),
    expect: {
      kind: 'rate_limited',
      status: 429,
      code: 'RESOURCE_EXHAUSTED',
      message: /^Resource has been exhausted \(e\.g\. check quota\)\.$/,
    },
  },
  {
    // The SDK alone sees "429 status code (no body)": status decides.
    name: 'gc429-array-sdk-only',
    reply: json(429, C.geminiArray429),
    noCapture: true,
    expect: { kind: 'rate_limited', status: 429, message: /^429 status code \(no body\)$/ },
  },
  {
    name: 'gc429-array-retry-after',
    reply: json(429, C.geminiArray429, { 'retry-after': '9' }),
    expect: {
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 9_000,
      code: 'RESOURCE_EXHAUSTED',
      message: /Resource has been exhausted/,
    },
  },
  {
    name: 'gc429-array-per-day',
    reply: json(429, C.geminiArrayPerDay),
    // 12:00 noon PDT (wall clock): the compat endpoint's per-day quota also resets at midnight Pacific, 12 h later.
    ctx: { now: Date.parse('2026-08-17T19:00:00Z') },
    expect: {
      kind: 'credit_exhausted',
      status: 429,
      code: 'RESOURCE_EXHAUSTED',
      disableForMs: 12 * 3_600_000,
      disableReason:
        "per-day quota GenerateRequestsPerDayPerProjectPerModel-FreeTier exhausted, until Gemini's daily reset at 00:00 America/Los_Angeles",
      message:
        /^per-day quota \S+PerDay\S* exhausted; key disabled until .*\(in 12 h 0 min\): .*exceeded your current quota/,
    },
  },
  {
    name: 'gc503-array',
    reply: json(503, [
      {
        error: {
          code: 503,
          message: 'The model is overloaded. Please try again later.',
          status: 'UNAVAILABLE',
        },
      },
    ]),
    expect: { kind: 'overloaded', status: 503, code: 'UNAVAILABLE', message: /^The model is overloaded/ },
  },
  {
    name: 'gc400-array-bad-key',
    reply: json(400, [
      {
        error: {
          code: 400,
          message: 'API key not valid. Please pass a valid API key.',
          status: 'INVALID_ARGUMENT',
          details: [
            {
              '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
              reason: 'API_KEY_INVALID',
              domain: 'googleapis.com',
            },
          ],
        },
      },
    ]),
    expect: { kind: 'auth', status: 400, code: 'API_KEY_INVALID', message: /^API key not valid/ },
  },
];

const ollama: WireCase[] = [
  {
    name: 'ol503-server-busy',
    reply: json(503, C.ollamaBusy),
    expect: {
      kind: 'overloaded',
      status: 503,
      code: 'api_error',
      message: /^server busy, please try again\. maximum pending requests exceeded$/,
    },
  },
  {
    name: 'ol404-model',
    reply: json(404, C.ollamaNotFound),
    expect: { kind: 'bad_request', status: 404, code: 'not_found_error', message: /try pulling it first/ },
  },
];

const vllm: WireCase[] = [
  {
    name: 'vl500-empty',
    reply: { status: 500 },
    expect: { kind: 'server_error', status: 500, message: /^500 status code \(no body\)$/ },
  },
  {
    name: 'vl400-int-code',
    reply: json(400, C.vllmBadRequest),
    expect: { kind: 'bad_request', status: 400, code: 'BadRequestError', message: /maximum context length/ },
  },
  {
    name: 'vl-refused-after-exit',
    target: 'refused',
    expect: { kind: 'network', code: 'ECONNREFUSED', message: /ECONNREFUSED/ },
  },
  {
    name: 'vl-queue-timeout',
    reply: { action: 'hang' },
    call: { timeout: 100 },
    expect: { kind: 'timeout', message: /^Request timed out\.$/ },
  },
];

const baseURL = (u: string) => `${u}/v1`;

describeWireCases(
  'classifyError × openai SDK → Gemini compat endpoint',
  { provider: 'openai-compatible', flavor: 'gemini-compat', baseURL, call: openaiCall, captured: 'always' },
  geminiCompat,
);
describeWireCases(
  'classifyError × openai SDK → Ollama',
  { provider: 'openai-compatible', flavor: 'ollama', baseURL, call: openaiCall, captured: 'both' },
  ollama,
);
describeWireCases(
  'classifyError × openai SDK → vLLM',
  { provider: 'openai-compatible', flavor: 'vllm', baseURL, call: openaiCall, captured: 'both' },
  vllm,
);
