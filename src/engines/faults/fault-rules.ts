import type { CompatFlavor, ProviderKind } from '../../core/engine-types.ts';
import type { ErrorFacts } from './error-facts.ts';
import type { FaultKind } from '../../core/fault.ts';

/**
 * The classification table of provider-wire-facts §6.4 for errors that carry an HTTP status (or,
 * for a stream error, a provider error type standing in for one). Rows are evaluated in the
 * table's order: credit → rate-limited → overloaded → server error → auth → bad request.
 */

/** Anthropic `details.error_code` values that mean a spend cap, not a passing rate limit. */
const ANTHROPIC_SPEND_CODES: ReadonlySet<string> = new Set([
  'enforced_spend_limit_reached',
  'contract_spend_limit_reached',
  'linked_organization_spend_limit_reached',
]);

/** OpenAI `error.code` values for credit/billing exhaustion (type is `insufficient_quota` for all of them). */
const OPENAI_BILLING_CODES: ReadonlySet<string> = new Set([
  'insufficient_quota',
  'credit_balance_exhausted',
  'organization_usage_limit_exceeded',
  'organization_spend_limit_exceeded',
  'project_spend_limit_exceeded',
]);

const ANTHROPIC_CREDIT_TEXT = /credit balance is too low|You have reached your specified API usage limits/i;
/** Spend-cap wording on a 429 that came without the error_code (and without retry-after). */
const SPEND_LIMIT_TEXT =
  /spend(?:ing)?[ _-]?(?:limit|cap)|usage limits?|credit balance|billing|regain access|until access resumes/i;
const OPENAI_QUOTA_TEXT = /exceeded your current quota/i;
const REQUEST_TOO_LARGE_TEXT = /request too large/i;
const GEMINI_BAD_KEY_TEXT = /API key not valid|API_KEY_INVALID/i;

/** Gemini quota retry delays above this are treated as terminal, as gemini-cli does. */
export const GEMINI_TERMINAL_RETRY_DELAY_MS = 120_000;

/**
 * Status a provider error type stands for: a stream error arrives after a 200 with no status of
 * its own, only `type` (Anthropic `overloaded_error`) or an OpenAI `error` object.
 */
const TYPE_STATUS: Readonly<Record<string, number>> = Object.freeze({
  // Anthropic
  invalid_request_error: 400,
  authentication_error: 401,
  billing_error: 402,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  timeout_error: 504,
  overloaded_error: 529,
  // OpenAI (type or code)
  invalid_api_key: 401,
  insufficient_quota: 429,
  rate_limit_exceeded: 429,
  tokens: 429,
  requests: 429,
  server_error: 500,
  // Google rpc status
  INVALID_ARGUMENT: 400,
  FAILED_PRECONDITION: 400,
  OUT_OF_RANGE: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  RESOURCE_EXHAUSTED: 429,
  INTERNAL: 500,
  UNKNOWN: 500,
  UNAVAILABLE: 503,
  DEADLINE_EXCEEDED: 504,
});

/**
 * The status an error stands for: its HTTP status, else the one its provider type implies
 * (stream errors), else 500 — a stream that failed after a 200 was accepted, so it is not the
 * request's fault.
 */
function effectiveStatus(f: ErrorFacts): number {
  if (f.status !== undefined) return f.status;
  for (const t of [f.errorCode, f.type, f.google?.status]) {
    if (t && TYPE_STATUS[t] !== undefined) return TYPE_STATUS[t] as number;
    if (t && OPENAI_BILLING_CODES.has(t)) return 429;
    if (t && ANTHROPIC_SPEND_CODES.has(t)) return 429;
  }
  if (f.apiMessage && /overloaded|server busy|high demand/i.test(f.apiMessage)) return 503;
  return 500;
}

/** Which wire dialect's rules apply: Gemini's compat path speaks OpenAI but errs like Google. */
type Dialect = 'anthropic' | 'openai' | 'gemini';

function dialectOf(provider: ProviderKind, flavor: CompatFlavor | undefined, f: ErrorFacts): Dialect {
  if (provider === 'anthropic') return 'anthropic';
  if (provider === 'gemini') return 'gemini';
  if (f.google?.status || flavor === 'gemini-compat') return 'gemini';
  return 'openai';
}

function text(f: ErrorFacts): string {
  return `${f.apiMessage ?? ''} ${f.message}`;
}

function isCreditExhausted(d: Dialect, status: number, f: ErrorFacts, hasRetryAfterHeader: boolean): boolean {
  if (status === 402 || f.type === 'billing_error') return true;
  if (status === 400 && ANTHROPIC_CREDIT_TEXT.test(text(f))) return true;
  if (status !== 429) return false;
  if (f.errorCode && (ANTHROPIC_SPEND_CODES.has(f.errorCode) || OPENAI_BILLING_CODES.has(f.errorCode)))
    return true;
  if (f.type === 'insufficient_quota') return true;
  if (d === 'anthropic') {
    return !hasRetryAfterHeader && f.errorCode === undefined && SPEND_LIMIT_TEXT.test(f.apiMessage ?? '');
  }
  if (d === 'gemini') {
    const g = f.google;
    if (!g || g.reasons.includes('MODEL_CAPACITY_EXHAUSTED')) return false;
    if (g.quotaIds.some((q) => /PerDay/i.test(q))) return true;
    return g.retryDelayMs !== undefined && g.retryDelayMs > GEMINI_TERMINAL_RETRY_DELAY_MS;
  }
  // Older OpenAI bodies carried `code: null` and only the quota sentence.
  return f.type === undefined && f.errorCode === undefined && OPENAI_QUOTA_TEXT.test(text(f));
}

function isAuth(d: Dialect, status: number, f: ErrorFacts): boolean {
  if (status === 401 || status === 403) return true;
  if (f.errorCode === 'invalid_api_key') return true;
  if (d === 'gemini' && status === 400) {
    return (f.google?.reasons.includes('API_KEY_INVALID') ?? false) || GEMINI_BAD_KEY_TEXT.test(text(f));
  }
  return false;
}

/**
 * The §6.4 kind for an error with an HTTP status or a provider error type.
 *
 * @param hasRetryAfterHeader whether the response carried `retry-after`/`retry-after-ms` (Anthropic
 *   spend caps come without one).
 * @example
 * ```ts
 * kindFromProviderError('openai', undefined, readErrorFacts(err), false); // 'credit_exhausted' for insufficient_quota
 * ```
 */
export function kindFromProviderError(
  provider: ProviderKind,
  flavor: CompatFlavor | undefined,
  f: ErrorFacts,
  hasRetryAfterHeader: boolean,
): FaultKind {
  const d = dialectOf(provider, flavor, f);
  const status = effectiveStatus(f);

  if (isCreditExhausted(d, status, f, hasRetryAfterHeader)) return 'credit_exhausted';
  if (status === 429) {
    // Larger than the endpoint's per-minute limit: no wait makes it fit there, another endpoint may take it.
    if (d === 'openai' && REQUEST_TOO_LARGE_TEXT.test(text(f))) return 'request_too_large';
    if (f.google?.reasons.includes('MODEL_CAPACITY_EXHAUSTED')) return 'overloaded';
    return 'rate_limited';
  }
  if (status === 529 || status === 503 || f.type === 'overloaded_error') return 'overloaded';
  // 409 (Anthropic conflict_error) is retried by the SDKs: a transient server-side condition.
  if (status >= 500 || status === 409) return 'server_error';
  if (status === 408) return 'timeout';
  if (isAuth(d, status, f)) return 'auth';
  if (status === 499) return 'cancelled';
  return 'bad_request';
}
