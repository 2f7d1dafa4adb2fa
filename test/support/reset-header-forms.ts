import type { CannedReply } from './wire-fixture-server.ts';

/**
 * Every way a real provider says "come back in N ms" on a 429, as a raw server would send it, with the
 * instants stamped on the wall clock the way Anthropic and HTTP servers stamp them (provider-wire-facts
 * §1.4, §2.3). Shared by the engine test (fixed wall clock) and the scenario test (real wall clock).
 */

/** The wire a form belongs to. */
export type FormProvider = 'anthropic' | 'openai';

/** One way of saying how long to wait. */
export interface ResetHeaderForm {
  /** Also the fixture route. */
  readonly name: string;
  readonly provider: FormProvider;
  /** The headers of a 429 asking for `waitMs`, stamped against `wallNow` where the form is an instant. */
  headers(wallNow: number, waitMs: number): Record<string, string>;
}

/** RFC 3339 without a fraction on a whole second, as Anthropic writes it. */
const rfc3339 = (ms: number) => new Date(ms).toISOString().replace('.000Z', 'Z');

/** The five forms, one per source the classifier reads. HTTP-dates have whole seconds: give them one. */
export const RESET_HEADER_FORMS: readonly ResetHeaderForm[] = [
  {
    name: 'retry-after-seconds',
    provider: 'anthropic',
    headers: (_wall, waitMs) => ({ 'retry-after': String(Math.ceil(waitMs / 1000)) }),
  },
  {
    name: 'retry-after-http-date',
    provider: 'openai',
    // An HTTP-date has whole seconds: rounded UP, so the wait it says is never shorter than `waitMs` (rounded
    // down, the lost fraction plus the transit time could take it under the tests' tolerance).
    headers: (wall, waitMs) => ({
      'retry-after': new Date(Math.ceil((wall + waitMs) / 1000) * 1000).toUTCString(),
    }),
  },
  {
    name: 'retry-after-ms',
    provider: 'openai',
    headers: (_wall, waitMs) => ({ 'retry-after-ms': String(waitMs) }),
  },
  {
    name: 'anthropic-ratelimit-reset',
    provider: 'anthropic',
    headers: (wall, waitMs) => ({
      'anthropic-ratelimit-requests-limit': '50',
      'anthropic-ratelimit-requests-remaining': '0',
      'anthropic-ratelimit-requests-reset': rfc3339(wall + waitMs),
      'anthropic-ratelimit-tokens-limit': '80000',
      'anthropic-ratelimit-tokens-remaining': '61000',
      'anthropic-ratelimit-tokens-reset': rfc3339(wall + 1_000),
    }),
  },
  {
    name: 'openai-ratelimit-reset',
    provider: 'openai',
    headers: (_wall, waitMs) => ({
      'x-ratelimit-limit-requests': '60',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': `${waitMs / 1000}s`,
      'x-ratelimit-limit-tokens': '150000',
      'x-ratelimit-remaining-tokens': '149000',
      'x-ratelimit-reset-tokens': '0s',
    }),
  },
];

/** The provider's 429 body (no delay written in its text, so only the headers can say it). */
export function rateLimitBody(provider: FormProvider): unknown {
  return provider === 'anthropic'
    ? {
        type: 'error',
        error: {
          type: 'rate_limit_error',
          message: "This request would exceed your organization's rate limit of 50 requests per minute.",
        },
        request_id: 'req_011FormTest',
      }
    : {
        error: {
          message: 'Rate limit reached for gpt-4o in organization org-test on requests per min (RPM).',
          type: 'requests',
          param: null,
          code: 'rate_limit_exceeded',
        },
      };
}

/** A 429 in the form's shape, asking for `waitMs` from `wallNow`. */
export function rateLimitReply(form: ResetHeaderForm, wallNow: number, waitMs: number): CannedReply {
  return { status: 429, headers: form.headers(wallNow, waitMs), body: rateLimitBody(form.provider) };
}

/** A complete JSON reply. */
export interface JsonReply {
  readonly status: number;
  readonly headers: Record<string, string>;
  readonly body: unknown;
}

/** A minimal successful answer on the provider's wire. */
export function okReply(provider: FormProvider, text = 'All systems nominal.'): JsonReply {
  return provider === 'anthropic'
    ? {
        status: 200,
        headers: { 'request-id': 'req_011Ok' },
        body: {
          id: 'msg_ok',
          type: 'message',
          role: 'assistant',
          model: 'claude-sonnet-4-6',
          content: [{ type: 'text', text }],
          stop_reason: 'end_turn',
          stop_sequence: null,
          usage: { input_tokens: 12, output_tokens: 5 },
        },
      }
    : {
        status: 200,
        headers: { 'x-request-id': 'req_ok' },
        body: {
          id: 'chatcmpl-ok',
          object: 'chat.completion',
          created: 1_726_012_687,
          model: 'gpt-4o',
          choices: [
            {
              index: 0,
              message: { role: 'assistant', content: text },
              finish_reason: 'stop',
              logprobs: null,
            },
          ],
          usage: { prompt_tokens: 12, completion_tokens: 5, total_tokens: 17 },
        },
      };
}
