/**
 * Error bodies exactly as quoted in /work/shared/reference/provider-wire-facts.md (section in each
 * comment). Where the reference gives only a type and a paraphrase, the message is marked "(shape)".
 */

// ── Anthropic (§1.5) ────────────────────────────────────────────────────────────────────────────

const anthropicError = (type: string, message: string, requestId: string, details?: object) => ({
  type: 'error',
  error: { type, message, ...(details ? { details } : {}) },
  request_id: requestId,
});

export const anthropic = {
  creditTooLow: anthropicError(
    'invalid_request_error',
    'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.',
    'req_011CbrFTcXhtiMzr3s6EocF7',
  ),
  usageLimits: anthropicError(
    'invalid_request_error',
    'You have reached your specified API usage limits. You will regain access on 2026-04-01 at 00:00 UTC.',
    'req_011UsageLimits',
  ),
  // (shape) 402 billing_error: "issue with your billing or payment information"
  billing: anthropicError(
    'billing_error',
    'There is an issue with your billing or payment information.',
    'req_011Billing',
  ),
  rateLimit: anthropicError(
    'rate_limit_error',
    "This request would exceed your organization's rate limit of 50,000 input tokens per minute …",
    'req_011TEST',
  ),
  rateLimitShort: anthropicError('rate_limit_error', 'Rate limited', 'req_011Short'),
  // (shape) spend cap 429: rate_limit_error + details.error_code, no retry-after
  spendLimit: anthropicError(
    'rate_limit_error',
    "You have reached your organization's monthly spend limit. Access resumes at 00:00 UTC on the 1st of next month.",
    'req_011Spend',
    { error_code: 'enforced_spend_limit_reached' },
  ),
  contractSpend: anthropicError(
    'rate_limit_error',
    'Your contract spend limit has been reached.',
    'req_011Contract',
    { error_code: 'contract_spend_limit_reached' },
  ),
  spendLimitNoCode: anthropicError(
    'rate_limit_error',
    "You have reached your organization's monthly spend limit. Access resumes at 00:00 UTC on the 1st of next month.",
    'req_011SpendText',
  ),
  ramp: anthropicError(
    'rate_limit_error',
    'Your organization is ramping up too quickly. Retry after the time in the retry-after header.',
    'req_011Ramp',
    { error_code: 'ramp_limit_exceeded' },
  ),
  overloaded: anthropicError('overloaded_error', 'Overloaded', 'req_011X'),
  internal: anthropicError('api_error', 'Internal server error', 'req_011Internal'),
  timeout: anthropicError(
    'timeout_error',
    'The request timed out while processing. Consider using streaming',
    'req_011Timeout',
  ),
  unavailable: anthropicError('api_error', 'Service Unavailable', 'req_011Unavailable'),
  badKey: anthropicError('authentication_error', 'invalid x-api-key', 'req_011Auth'),
  permission: anthropicError(
    'permission_error',
    'Your API key does not have permission to use the specified resource.',
    'req_011Perm',
  ),
  invalid: anthropicError('invalid_request_error', 'messages: field required', 'req_011Invalid'),
  notFound: anthropicError('not_found_error', 'model: claude-nope', 'req_011NotFound'),
  tooLarge: anthropicError(
    'request_too_large',
    'Request exceeds the maximum allowed number of bytes.',
    'req_011Large',
  ),
};

/** The 429 header set of §1.5: retry-after, request-id and the anthropic-ratelimit-* family with remaining 0. */
export const anthropicRateLimitHeaders = {
  'retry-after': '12',
  'request-id': 'req_011TEST',
  'anthropic-ratelimit-requests-limit': '1000',
  'anthropic-ratelimit-requests-remaining': '999',
  'anthropic-ratelimit-requests-reset': '2025-08-21T12:40:59Z',
  'anthropic-ratelimit-input-tokens-limit': '50000',
  'anthropic-ratelimit-input-tokens-remaining': '0',
  'anthropic-ratelimit-input-tokens-reset': '2025-08-21T12:40:59Z',
  'anthropic-ratelimit-tokens-limit': '66000',
  'anthropic-ratelimit-tokens-remaining': '0',
  'anthropic-ratelimit-tokens-reset': '2025-08-21T12:40:59Z',
};

/** §1.3: an error event after a 200 stream started. */
export const anthropicStreamOverloaded = [
  'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"output_tokens":1}}}\n\n',
  'event: error\ndata: {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}\n\n',
];

// ── OpenAI (§2.4) ───────────────────────────────────────────────────────────────────────────────

const openaiError = (message: string, type: string | null, code: string | number | null) => ({
  error: { message, type, param: null, code },
});

export const openai = {
  tpm: openaiError(
    'Rate limit reached for o4-mini in organization org-… on tokens per min (TPM): Limit 200000, Used 162960, Requested 42288. Please try again in 1.574s. Visit https://platform.openai.com/account/rate-limits to learn more.',
    'tokens',
    'rate_limit_exceeded',
  ),
  rpm: openaiError(
    'Rate limit reached for gpt-4o in organization org-… on requests per min (RPM): Limit 500, Used 500, Requested 1. Please try again in 120ms.',
    'requests',
    'rate_limit_exceeded',
  ),
  tooLarge: openaiError(
    'Request too large for gpt-4o in organization org-… on tokens per min (TPM): Limit 30000, Requested 31538. The input or output tokens must be reduced in order to run successfully. Visit https://platform.openai.com/account/rate-limits to learn more.',
    'tokens',
    'rate_limit_exceeded',
  ),
  quota: openaiError(
    'You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.',
    'insufficient_quota',
    'insufficient_quota',
  ),
  quotaOld: openaiError(
    'You exceeded your current quota, please check your plan and billing details.',
    'insufficient_quota',
    null,
  ),
  billing: (code: string) =>
    openaiError(
      `Billing limit reached (${code}). Add credits or raise the limit to continue.`,
      'insufficient_quota',
      code,
    ),
  badKey: openaiError(
    'Incorrect API key provided: sk-…XXXX. You can find your API key at https://platform.openai.com/account/api-keys.',
    'invalid_request_error',
    'invalid_api_key',
  ),
  /** A 401 that echoes the full key the client sent (what a careless proxy does). */
  badKeyEcho: (key: string) =>
    openaiError(
      `Incorrect API key provided: ${key}. You can find your API key at https://platform.openai.com/account/api-keys.`,
      'invalid_request_error',
      'invalid_api_key',
    ),
  permission: openaiError('You are not allowed to sample from this model', 'invalid_request_error', null),
  server: openaiError(
    'The server had an error while processing your request. Sorry about that!',
    'server_error',
    null,
  ),
  overloaded: openaiError(
    'The engine is currently overloaded, please try again later.',
    'server_error',
    null,
  ),
  invalid: openaiError(
    "Invalid value for 'temperature': must be <= 2.",
    'invalid_request_error',
    'invalid_value',
  ),
  notFound: openaiError(
    'The model `gpt-9` does not exist or you do not have access to it.',
    'invalid_request_error',
    'model_not_found',
  ),
  unprocessable: openaiError('Unprocessable entity', 'invalid_request_error', null),
};

/** §2.1: a data line carrying an error after the stream began. */
export const openaiStreamError = [
  'data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}\n\n',
  'data: {"error":{"message":"The server had an error while processing your request. Sorry about that!","type":"server_error","param":null,"code":null}}\n\n',
];

export const openaiStreamRateLimit = [
  'data: {"error":{"message":"Rate limit reached for gpt-4o on tokens per min (TPM). Please try again in 20ms.","type":"tokens","param":null,"code":"rate_limit_exceeded"}}\n\n',
];

// ── OpenAI-compatible servers (§3.2, §4) ─────────────────────────────────────────────────────────

export const compat = {
  geminiArray429: [
    {
      error: {
        code: 429,
        message: 'Resource has been exhausted (e.g. check quota).',
        status: 'RESOURCE_EXHAUSTED',
      },
    },
  ],
  geminiArrayPerDay: [
    {
      error: {
        code: 429,
        message: 'You exceeded your current quota, please check your plan and billing details.',
        status: 'RESOURCE_EXHAUSTED',
        details: [
          {
            '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
            violations: [{ quotaId: 'GenerateRequestsPerDayPerProjectPerModel-FreeTier', quotaValue: '25' }],
          },
        ],
      },
    },
  ],
  ollamaBusy: {
    error: {
      message: 'server busy, please try again.  maximum pending requests exceeded',
      type: 'api_error',
      param: null,
      code: null,
    },
  },
  ollamaNotFound: {
    error: {
      message: 'model "llama9" not found, try pulling it first',
      type: 'not_found_error',
      param: null,
      code: null,
    },
  },
  vllmBadRequest: {
    error: {
      message: "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens.",
      type: 'BadRequestError',
      param: null,
      code: 400,
    },
  },
};

// ── Gemini (§3.3) ───────────────────────────────────────────────────────────────────────────────

const quotaFailure = (quotaId: string, quotaValue: string) => ({
  '@type': 'type.googleapis.com/google.rpc.QuotaFailure',
  violations: [
    {
      quotaMetric: 'generativelanguage.googleapis.com/generate_content_free_tier_requests',
      quotaId,
      quotaDimensions: { location: 'global', model: 'gemini-2.0-flash' },
      quotaValue,
    },
  ],
});
const help = {
  '@type': 'type.googleapis.com/google.rpc.Help',
  links: [
    {
      description: 'Learn more about Gemini API quotas',
      url: 'https://ai.google.dev/gemini-api/docs/rate-limits',
    },
  ],
};
const retryInfo = (retryDelay: string) => ({
  '@type': 'type.googleapis.com/google.rpc.RetryInfo',
  retryDelay,
});
const googleError = (code: number, status: string, message: string, details?: unknown[]) => ({
  error: { code, message, status, ...(details ? { details } : {}) },
});

export const gemini = {
  /** The verbatim 429 of §3.3 (per-day free-tier quota, retryDelay 47s). */
  perDay: googleError(
    429,
    'RESOURCE_EXHAUSTED',
    'You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.',
    [quotaFailure('GenerateRequestsPerDayPerProjectPerModel-FreeTier', '25'), help, retryInfo('47s')],
  ),
  /** A per-day quota id as a hostile or broken server could send it: a line break, a key, 400 characters. */
  perDayHostileId: googleError(
    429,
    'RESOURCE_EXHAUSTED',
    'You exceeded your current quota, please check your plan and billing details.',
    [
      quotaFailure(
        `GenerateRequestsPerDay\nkey=AIzaSyHostileQuotaId00000000000000001 ${'X'.repeat(400)}`,
        '25',
      ),
    ],
  ),
  perMinute: googleError(
    429,
    'RESOURCE_EXHAUSTED',
    'You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits.',
    [
      quotaFailure('GenerateRequestsPerMinutePerProjectPerModel-FreeTier', '15'),
      help,
      retryInfo('1.203608125s'),
    ],
  ),
  perMinuteLongDelay: googleError(
    429,
    'RESOURCE_EXHAUSTED',
    'You exceeded your current quota, please check your plan and billing details.',
    [quotaFailure('GenerateContentInputTokensPerModelPerMinute-FreeTier', '250000'), retryInfo('180s')],
  ),
  retryInMessage: googleError(
    429,
    'RESOURCE_EXHAUSTED',
    'You exceeded your current quota, please check your plan and billing details. Please retry in 53.016342224s.',
  ),
  capacity: googleError(
    429,
    'RESOURCE_EXHAUSTED',
    'No capacity available for model gemini-2.5-pro on the server',
    [
      {
        '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
        reason: 'MODEL_CAPACITY_EXHAUSTED',
        domain: 'cloudcode-pa.googleapis.com',
        metadata: { model: 'gemini-2.5-pro' },
      },
      retryInfo('8s'),
    ],
  ),
  overloaded: googleError(503, 'UNAVAILABLE', 'The model is overloaded. Please try again later.'),
  highDemand: googleError(
    503,
    'UNAVAILABLE',
    'This model is currently experiencing high demand. Spikes in demand are usually temporary. Please try again later.',
  ),
  internal: googleError(
    500,
    'INTERNAL',
    'An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting',
  ),
  deadline: googleError(504, 'DEADLINE_EXCEEDED', 'Deadline expired before operation could complete.'),
  badKey: googleError(400, 'INVALID_ARGUMENT', 'API key not valid. Please pass a valid API key.', [
    {
      '@type': 'type.googleapis.com/google.rpc.ErrorInfo',
      reason: 'API_KEY_INVALID',
      domain: 'googleapis.com',
      metadata: { service: 'generativelanguage.googleapis.com' },
    },
  ]),
  permission: googleError(403, 'PERMISSION_DENIED', 'Permission denied: Consumer has been suspended.'),
  invalid: googleError(
    400,
    'INVALID_ARGUMENT',
    '* GenerateContentRequest.contents: contents is not specified\n',
  ),
  notFound: googleError(
    404,
    'NOT_FOUND',
    'models/gemini-9 is not found for API version v1beta, or is not supported for generateContent.',
  ),
};
