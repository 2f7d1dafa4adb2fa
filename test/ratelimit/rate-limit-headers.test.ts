import { describe, expect, it } from 'vitest';
import { readRateLimitState } from '../../src/engines/wire/rate-limit-headers.ts';

const now = Date.parse('2025-08-21T12:40:00Z');

describe('readRateLimitState — Anthropic (§1.4)', () => {
  it('reads the real 200 header set (tidyllm fixture)', () => {
    const headers = new Headers({
      'anthropic-ratelimit-input-tokens-limit': '80000',
      'anthropic-ratelimit-input-tokens-remaining': '80000',
      'anthropic-ratelimit-input-tokens-reset': '2025-08-21T12:40:59Z',
      'anthropic-ratelimit-output-tokens-limit': '16000',
      'anthropic-ratelimit-requests-limit': '1000',
      'anthropic-ratelimit-requests-remaining': '999',
      'anthropic-ratelimit-tokens-limit': '96000',
      'request-id': 'req_011CSLsW7mFqvHHnzrKdKjAE',
    });
    expect(readRateLimitState('anthropic', headers, now)).toEqual({
      requests: { limit: 1000, remaining: 999 },
      tokens: { limit: 96000 },
      inputTokens: { limit: 80000, remaining: 80000, resetAt: Date.parse('2025-08-21T12:40:59Z') },
      outputTokens: { limit: 16000 },
    });
  });

  it('reads the 429 set with retry-after and exhausted dimensions', () => {
    const state = readRateLimitState(
      'anthropic',
      new Headers({
        'retry-after': '12',
        'anthropic-ratelimit-requests-limit': '50',
        'anthropic-ratelimit-requests-remaining': '0',
        'anthropic-ratelimit-requests-reset': '2025-08-21T12:40:12Z',
        'anthropic-ratelimit-tokens-limit': '66000',
        'anthropic-ratelimit-tokens-remaining': '0',
        'anthropic-ratelimit-tokens-reset': '2025-08-21T12:40:30Z',
      }),
      now,
    );
    expect(state.retryAfterMs).toBe(12_000);
    expect(state.requests).toEqual({ limit: 50, remaining: 0, resetAt: now + 12_000 });
    expect(state.tokens).toEqual({ limit: 66000, remaining: 0, resetAt: now + 30_000 });
    expect(state.inputTokens).toBeUndefined();
    expect(Object.isFrozen(state)).toBe(true);
    expect(Object.isFrozen(state.requests)).toBe(true);
  });

  it('ignores the OpenAI family and unreadable values', () => {
    const state = readRateLimitState(
      'anthropic',
      new Headers({
        'x-ratelimit-limit-requests': '60',
        'anthropic-ratelimit-requests-limit': 'lots',
        'anthropic-ratelimit-requests-reset': 'tomorrow',
      }),
      now,
    );
    expect(state).toEqual({});
  });
});

describe('readRateLimitState — OpenAI (§2.3)', () => {
  const docSample = {
    'x-ratelimit-limit-requests': '60',
    'x-ratelimit-limit-tokens': '150000',
    'x-ratelimit-remaining-requests': '59',
    'x-ratelimit-remaining-tokens': '149984',
    'x-ratelimit-reset-requests': '1s',
    'x-ratelimit-reset-tokens': '6m0s',
  };

  it('reads the documented sample; Go-duration resets become instants', () => {
    expect(readRateLimitState('openai', new Headers(docSample), now)).toEqual({
      requests: { limit: 60, remaining: 59, resetAt: now + 1_000 },
      tokens: { limit: 150000, remaining: 149984, resetAt: now + 360_000 },
    });
  });

  it('reads retry-after-ms first, then retry-after', () => {
    expect(
      readRateLimitState(
        'openai',
        new Headers({ ...docSample, 'retry-after-ms': '300', 'retry-after': '1' }),
        now,
      ).retryAfterMs,
    ).toBe(300);
    expect(readRateLimitState('openai', new Headers({ 'retry-after': '20' }), now)).toEqual({
      retryAfterMs: 20_000,
    });
  });

  it('reads the same family for OpenAI-compatible servers', () => {
    expect(
      readRateLimitState(
        'openai-compatible',
        new Headers({ 'x-ratelimit-remaining-tokens': '0', 'x-ratelimit-reset-tokens': '17.28s' }),
        now,
      ),
    ).toEqual({ tokens: { remaining: 0, resetAt: now + 17_280 } });
  });

  it("drops Azure's -1 values and sub-fields that do not parse", () => {
    expect(
      readRateLimitState(
        'openai',
        new Headers({
          'x-ratelimit-limit-requests': '-1',
          'x-ratelimit-remaining-requests': '-1',
          'x-ratelimit-limit-tokens': '1000',
          'x-ratelimit-reset-tokens': 'whenever',
        }),
        now,
      ),
    ).toEqual({ tokens: { limit: 1000 } });
  });

  it('a 429 without any rate-limit header (openai-node#1477) gives an empty state', () => {
    expect(readRateLimitState('openai', new Headers({ 'x-request-id': 'req_1' }), now)).toEqual({});
  });
});

describe('readRateLimitState — Gemini (§3.3: no rate-limit headers)', () => {
  it('is empty for a native Gemini response, and never reads the Anthropic family', () => {
    expect(
      readRateLimitState(
        'gemini',
        new Headers({ 'content-type': 'application/json', 'anthropic-ratelimit-requests-limit': '5' }),
        now,
      ),
    ).toEqual({});
  });
});
