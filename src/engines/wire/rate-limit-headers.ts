import type { ProviderKind, RateLimitState, RateLimitWindow } from '../../core/engine-types.ts';
import { parseGoDuration, parseRfc3339, retryAfterHeaderMs } from './retry-after.ts';
import { DEFAULT_MAX_RETRY_AFTER_MS } from './retry-after-cap.ts';

/**
 * Options of {@link readRateLimitState}.
 *
 * @example
 * ```ts
 * readRateLimitState('anthropic', headers, clock.now(), { wallNow: Date.now(), maxResetInMs: 900_000 });
 * ```
 */
export interface ReadRateLimitOptions {
  /**
   * Wall-clock epoch ms when the response arrived (`Date.now()`). RFC 3339 resets and HTTP-date
   * `retry-after` values are wall-clock instants, measured from it and then placed on the caller's clock
   * (`now`). Default: `now` (right when the caller's clock is the wall clock).
   */
  readonly wallNow?: number;
  /** Ceiling on any reset or retry-after, ms from now. Default 15 min ({@link DEFAULT_MAX_RETRY_AFTER_MS}). */
  readonly maxResetInMs?: number;
}

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
 * Every reset lies within `maxResetInMs` of `now`: an absurd header cannot hold a bucket for days (the longest
 * wait cut is kept as `cappedFromMs`).
 *
 * @param now epoch ms on the caller's (run's) clock; every `resetAt` is on it: Go-duration resets
 *   become `now + duration`, RFC 3339 instants `now + (instant − options.wallNow)`.
 * @returns a frozen state; `{}` when the headers carry nothing.
 * @example
 * ```ts
 * const state = readRateLimitState('openai', response.headers, clock.now());
 * if (state.tokens?.remaining === 0) coolUntil(state.tokens.resetAt);
 * ```
 */
export function readRateLimitState(
  provider: ProviderKind,
  headers: Headers,
  now: number,
  options: ReadRateLimitOptions = {},
): RateLimitState {
  const wallNow = options.wallNow ?? now;
  const max = options.maxResetInMs ?? DEFAULT_MAX_RETRY_AFTER_MS;
  const state: {
    requests?: RateLimitWindow;
    tokens?: RateLimitWindow;
    inputTokens?: RateLimitWindow;
    outputTokens?: RateLimitWindow;
    retryAfterMs?: number;
    cappedFromMs?: number;
  } = {};
  // A wait past the cap is cut to it, and the longest one asked for is kept (the runtime says so).
  const within = (ms: number) => {
    if (ms > max) state.cappedFromMs = Math.max(state.cappedFromMs ?? 0, ms);
    return Math.min(Math.max(0, ms), max);
  };
  if (provider === 'anthropic') {
    // An instant on the wire is wall-clock: its distance from the wall now, placed on the run's clock.
    const at = (instant: number) => now + within(instant - wallNow);
    assign(state, 'requests', anthropicWindow(headers, 'requests', at));
    assign(state, 'tokens', anthropicWindow(headers, 'tokens', at));
    assign(state, 'inputTokens', anthropicWindow(headers, 'input-tokens', at));
    assign(state, 'outputTokens', anthropicWindow(headers, 'output-tokens', at));
  } else {
    const after = (ms: number) => now + within(ms);
    assign(state, 'requests', openAiWindow(headers, 'requests', after));
    assign(state, 'tokens', openAiWindow(headers, 'tokens', after));
  }
  const retryAfterMs = retryAfterHeaderMs(headers, wallNow);
  if (retryAfterMs !== undefined) state.retryAfterMs = within(retryAfterMs);
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

function anthropicWindow(
  headers: Headers,
  dim: string,
  at: (instant: number) => number,
): RateLimitWindow | undefined {
  const reset = headers.get(`anthropic-ratelimit-${dim}-reset`);
  const instant = reset === null ? undefined : parseRfc3339(reset);
  return window(
    count(headers, `anthropic-ratelimit-${dim}-limit`),
    count(headers, `anthropic-ratelimit-${dim}-remaining`),
    instant === undefined ? undefined : at(instant),
  );
}

function openAiWindow(
  headers: Headers,
  dim: string,
  after: (ms: number) => number,
): RateLimitWindow | undefined {
  const reset = headers.get(`x-ratelimit-reset-${dim}`);
  const resetMs = reset === null ? undefined : parseGoDuration(reset);
  return window(
    count(headers, `x-ratelimit-limit-${dim}`),
    count(headers, `x-ratelimit-remaining-${dim}`),
    resetMs === undefined ? undefined : after(resetMs),
  );
}
