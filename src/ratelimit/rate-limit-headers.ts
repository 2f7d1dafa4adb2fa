import type { ProviderKind, RateLimitState, RateLimitWindow } from '../engines/engine-types.ts';
import { parseGoDuration, parseRfc3339, retryAfterHeaderMs } from './retry-after.ts';

/**
 * Reads a response's rate-limit headers into a provider-neutral {@link RateLimitState}.
 *
 * - `anthropic`: `anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}`,
 *   resets are RFC 3339 instants.
 * - `openai`, `openai-compatible`: `x-ratelimit-{limit,remaining,reset}-{requests,tokens}`, resets are Go
 *   durations from `now` (`1s`, `6m0s`, `17.28s`).
 * - `gemini`: the native API sends no rate-limit headers; whatever `x-ratelimit-*` a proxy adds is read.
 *
 * Negative or non-numeric values (Azure has sent `-1`) count as "not reported". A dimension with no
 * field reported is left out. `retryAfterMs` comes from `retry-after-ms` / `retry-after` only.
 *
 * @param now epoch ms; Go-duration resets become `now + duration`.
 * @returns a frozen state; `{}` when the headers carry nothing.
 * @example
 * ```ts
 * const state = readRateLimitState('openai', response.headers, clock.now());
 * if (state.tokens?.remaining === 0) coolUntil(state.tokens.resetAt);
 * ```
 */
export function readRateLimitState(provider: ProviderKind, headers: Headers, now: number): RateLimitState {
  const state: {
    requests?: RateLimitWindow;
    tokens?: RateLimitWindow;
    inputTokens?: RateLimitWindow;
    outputTokens?: RateLimitWindow;
    retryAfterMs?: number;
  } = {};
  if (provider === 'anthropic') {
    assign(state, 'requests', anthropicWindow(headers, 'requests'));
    assign(state, 'tokens', anthropicWindow(headers, 'tokens'));
    assign(state, 'inputTokens', anthropicWindow(headers, 'input-tokens'));
    assign(state, 'outputTokens', anthropicWindow(headers, 'output-tokens'));
  } else {
    assign(state, 'requests', openAiWindow(headers, 'requests', now));
    assign(state, 'tokens', openAiWindow(headers, 'tokens', now));
  }
  const retryAfterMs = retryAfterHeaderMs(headers, now);
  if (retryAfterMs !== undefined) state.retryAfterMs = retryAfterMs;
  return Object.freeze(state);
}

function assign<K extends 'requests' | 'tokens' | 'inputTokens' | 'outputTokens'>(
  state: Partial<Record<K, RateLimitWindow>>,
  key: K,
  window: RateLimitWindow | undefined,
): void {
  if (window) state[key] = window;
}

function count(headers: Headers, name: string): number | undefined {
  const v = headers.get(name);
  if (v === null || v.trim() === '') return undefined;
  const n = Number(v);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}

function window(limit: number | undefined, remaining: number | undefined, resetAt: number | undefined) {
  if (limit === undefined && remaining === undefined && resetAt === undefined) return undefined;
  const w: { limit?: number; remaining?: number; resetAt?: number } = {};
  if (limit !== undefined) w.limit = limit;
  if (remaining !== undefined) w.remaining = remaining;
  if (resetAt !== undefined) w.resetAt = resetAt;
  return Object.freeze(w) as RateLimitWindow;
}

function anthropicWindow(headers: Headers, dim: string): RateLimitWindow | undefined {
  const reset = headers.get(`anthropic-ratelimit-${dim}-reset`);
  return window(
    count(headers, `anthropic-ratelimit-${dim}-limit`),
    count(headers, `anthropic-ratelimit-${dim}-remaining`),
    reset === null ? undefined : parseRfc3339(reset),
  );
}

function openAiWindow(headers: Headers, dim: string, now: number): RateLimitWindow | undefined {
  const reset = headers.get(`x-ratelimit-reset-${dim}`);
  const resetMs = reset === null ? undefined : parseGoDuration(reset);
  return window(
    count(headers, `x-ratelimit-limit-${dim}`),
    count(headers, `x-ratelimit-remaining-${dim}`),
    resetMs === undefined ? undefined : now + resetMs,
  );
}
