import Anthropic from '@anthropic-ai/sdk';
import { ApiError } from '@google/genai';
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { EmulatorProfile } from '../../src/emulator/emulator-types.ts';
import { anthropicClient, geminiClient, openaiClient, rejectionOf } from './sdk-clients.ts';

const ORIGIN = Date.parse('2026-08-17T00:00:00Z');
const KEY = 'sk-primary-0001';
const profile = (extra: Partial<EmulatorProfile> = {}): EmulatorProfile => ({
  keys: [{ alias: 'primary', key: KEY, quotas: { default: { rpm: 3 } } }],
  ...extra,
});

let emu: Emulator | undefined;
afterEach(async () => {
  await emu?.close();
  emu = undefined;
});

const ask = (client: Anthropic) =>
  client.messages
    .create({ model: 'claude-sonnet-4-6', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] })
    .withResponse();

describe('quotas: per key+model sliding windows of emulated time', () => {
  it('anthropic: rpm 3 → calls 1–3 pass with counting-down headers, the 4th gets 429 with the right retry-after', async () => {
    const clock = createManualClock(ORIGIN);
    // Reset instants are stamped in wall time; here the wall clock is the manual one, so they are exact.
    emu = await startEmulator({ profile: profile(), clock, wallNow: () => clock.now() });
    const client = anthropicClient(emu, KEY);
    const remaining: string[] = [];
    for (let i = 0; i < 3; i++) {
      const { response } = await ask(client);
      remaining.push(response.headers.get('anthropic-ratelimit-requests-remaining')!);
      expect(response.headers.get('anthropic-ratelimit-requests-limit')).toBe('3');
      expect(response.headers.get('request-id')).toMatch(/^req_011C/);
      clock.advance(1_000);
    }
    expect(remaining).toEqual(['2', '1', '0']);

    const err = await rejectionOf(ask(client));
    expect(err).toBeInstanceOf(Anthropic.RateLimitError);
    const e = err as InstanceType<typeof Anthropic.RateLimitError>;
    expect(e.status).toBe(429);
    expect(e.type).toBe('rate_limit_error');
    // Oldest call at t=0 leaves the 60 s window at t=60 s; now is t=3 s.
    expect(e.headers?.get('retry-after')).toBe('57');
    expect(e.headers?.get('retry-after-ms')).toBe('57000');
    expect(e.headers?.get('anthropic-ratelimit-requests-remaining')).toBe('0');
    // Fully replenished when the newest call (t=2 s) leaves: t=62 s.
    expect(e.headers?.get('anthropic-ratelimit-requests-reset')).toBe('2026-08-17T00:01:02Z');
    expect(e.requestID).toMatch(/^req_011C/);
    expect((e.error as { request_id?: string }).request_id).toBe(e.requestID);
    expect(e.message).toContain('rate limit of 3 requests per minute');

    clock.advance(56_999);
    expect(await rejectionOf(ask(client))).toBeInstanceOf(Anthropic.RateLimitError);
    clock.advance(1);
    const { data, response } = await ask(client);
    expect(data.type).toBe('message');
    expect(response.headers.get('anthropic-ratelimit-requests-remaining')).toBe('0');
    const stats = emu.stats();
    expect(stats.byStatus).toEqual({ '200': 4, '429': 2 });
  });

  it('timeScale shrinks the window: retry-after is real time, in decimal seconds', async () => {
    const clock = createManualClock(ORIGIN);
    emu = await startEmulator({ profile: profile({ timeScale: 60 }), clock });
    const client = anthropicClient(emu, KEY);
    for (let i = 0; i < 3; i++) {
      await ask(client);
      clock.advance(10); // 600 emulated ms
    }
    const e = (await rejectionOf(ask(client))) as InstanceType<typeof Anthropic.RateLimitError>;
    // Emulated: 60 000 − 1 800 = 58 200 ms → 970 real ms.
    expect(e.headers?.get('retry-after')).toBe('0.97');
    expect(e.headers?.get('retry-after-ms')).toBe('970');
    clock.advance(970);
    await expect(ask(client)).resolves.toBeDefined();
  });

  it('the quota is per key and per model', async () => {
    const clock = createManualClock(ORIGIN);
    emu = await startEmulator({
      profile: {
        acceptAnyKey: true,
        keys: [
          {
            alias: 'primary',
            key: KEY,
            quotas: { default: { rpm: 1 }, models: { 'claude-opus-4-1': { rpm: 2 } } },
          },
        ],
      },
      clock,
    });
    const client = anthropicClient(emu, KEY);
    const call = (model: string, c = client) =>
      c.messages.create({ model, max_tokens: 16, messages: [{ role: 'user', content: 'x' }] });
    await call('claude-sonnet-4-6');
    expect(await rejectionOf(call('claude-sonnet-4-6'))).toBeInstanceOf(Anthropic.RateLimitError);
    await call('claude-opus-4-1');
    await call('claude-opus-4-1');
    expect(await rejectionOf(call('claude-opus-4-1'))).toBeInstanceOf(Anthropic.RateLimitError);
    // Another (unlisted) key is not limited at all.
    await expect(
      call('claude-sonnet-4-6', anthropicClient(emu, 'sk-other-key-00000001')),
    ).resolves.toBeDefined();
  });

  it('anthropic: input tokens per minute — the call that would exceed ITPM is refused', async () => {
    const clock = createManualClock(ORIGIN);
    emu = await startEmulator({
      profile: { keys: [{ alias: 'primary', key: KEY, quotas: { default: { itpm: 50 } } }] },
      clock,
    });
    const client = anthropicClient(emu, KEY);
    const content = 'x'.repeat(120); // 30 tokens
    const call = () =>
      client.messages
        .create({ model: 'claude-sonnet-4-6', max_tokens: 16, messages: [{ role: 'user', content }] })
        .withResponse();
    const { response } = await call();
    expect(response.headers.get('anthropic-ratelimit-input-tokens-limit')).toBe('50');
    expect(response.headers.get('anthropic-ratelimit-input-tokens-remaining')).toBe('20');
    clock.advance(5_000);
    const e = (await rejectionOf(call())) as InstanceType<typeof Anthropic.RateLimitError>;
    expect(e.message).toContain('rate limit of 50 input tokens per minute');
    expect(e.headers?.get('retry-after')).toBe('55');
  });

  it('openai: a request larger than the TPM limit is "Request too large … Limit X, Requested Y", with no wait', async () => {
    const clock = createManualClock(ORIGIN);
    emu = await startEmulator({
      profile: { keys: [{ alias: 'primary', key: KEY, quotas: { default: { tpm: 50 } } }] },
      clock,
    });
    const client = openaiClient(emu, 'openai', KEY);
    const content = 'x'.repeat(400); // 100 input tokens: more than the whole minute's 50
    const e = (await rejectionOf(
      client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content }] }),
    )) as InstanceType<typeof OpenAI.RateLimitError>;
    expect(e).toBeInstanceOf(OpenAI.RateLimitError);
    expect(e.status).toBe(429);
    expect(e.type).toBe('tokens');
    expect(e.code).toBe('rate_limit_exceeded');
    expect(e.message).toMatch(
      /^429 Request too large for gpt-4o in organization org-emulator on tokens per min \(TPM\): Limit 50, Requested 100\. The input or output tokens must be reduced in order to run successfully\./,
    );
    // No wait makes it fit: nothing says "try again", and no retry-after invites one.
    expect(e.message).not.toMatch(/try again/i);
    expect(e.headers?.get('retry-after')).toBeNull();
    expect(e.headers?.get('retry-after-ms')).toBeNull();
    // The window is still empty: a request that fits goes through at once.
    await expect(
      client.chat.completions.create({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] }),
    ).resolves.toBeDefined();
  });

  it('anthropic and gemini: a request larger than the limit gets their rate-limit 429 with the whole window to wait, not 0 s', async () => {
    const clock = createManualClock(ORIGIN);
    emu = await startEmulator({
      profile: { keys: [{ alias: 'primary', key: KEY, quotas: { default: { itpm: 50, tpm: 50 } } }] },
      clock,
    });
    const content = 'x'.repeat(400);
    const a = (await rejectionOf(
      anthropicClient(emu, KEY).messages.create({
        model: 'claude-sonnet-4-6',
        max_tokens: 16,
        messages: [{ role: 'user', content }],
      }),
    )) as InstanceType<typeof Anthropic.RateLimitError>;
    expect(a.status).toBe(429);
    expect(a.message).toMatch(/would exceed your organization's rate limit of 50 [a-z ]*tokens per minute/);
    expect(a.headers?.get('retry-after')).toBe('60');
    const g = (await rejectionOf(
      geminiClient(emu, KEY).models.generateContent({ model: 'gemini-2.5-flash', contents: content }),
    )) as ApiError;
    expect(g.status).toBe(429);
    const retry = JSON.parse(g.message).error.details.find((d: { '@type': string }) =>
      d['@type'].endsWith('RetryInfo'),
    );
    expect(retry.retryDelay).toBe('60s');
  });

  it('openai: x-ratelimit-* count down with Go-duration resets; the 429 is type requests, code rate_limit_exceeded', async () => {
    const clock = createManualClock(ORIGIN);
    emu = await startEmulator({
      profile: { keys: [{ alias: 'primary', key: KEY, quotas: { default: { rpm: 3, tpm: 100_000 } } }] },
      clock,
    });
    const client = openaiClient(emu, 'openai', KEY);
    const call = () =>
      client.chat.completions
        .create({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] })
        .withResponse();
    const seen: Array<[string | null, string | null]> = [];
    for (let i = 0; i < 3; i++) {
      const { response } = await call();
      seen.push([
        response.headers.get('x-ratelimit-remaining-requests'),
        response.headers.get('x-ratelimit-reset-requests'),
      ]);
      expect(response.headers.get('x-ratelimit-limit-requests')).toBe('3');
      expect(response.headers.get('x-ratelimit-limit-tokens')).toBe('100000');
      expect(response.headers.get('x-request-id')).toMatch(/^req_[0-9a-z]{32}$/);
      clock.advance(1_500);
    }
    expect(seen).toEqual([
      ['2', '1m0s'],
      ['1', '1m0s'],
      ['0', '1m0s'],
    ]);
    const e = (await rejectionOf(call())) as InstanceType<typeof OpenAI.RateLimitError>;
    expect(e).toBeInstanceOf(OpenAI.RateLimitError);
    expect(e.type).toBe('requests');
    expect(e.code).toBe('rate_limit_exceeded');
    // Oldest at t=0 → 60 − 4.5 = 55.5 s.
    expect(e.message).toContain('Please try again in 55.5s.');
    expect(e.message).toContain('Limit 3, Used 3, Requested 1');
    expect(e.headers?.get('retry-after')).toBe('55.5');
    expect(e.headers?.get('retry-after-ms')).toBe('55500');
    expect(e.headers?.get('x-ratelimit-remaining-requests')).toBe('0');
    expect(e.headers?.get('x-ratelimit-reset-requests')).toBe('58.5s');
    clock.advance(55_500);
    await expect(call()).resolves.toBeDefined();
  });

  it('gemini: RESOURCE_EXHAUSTED with a PerMinute QuotaFailure and RetryInfo, no rate-limit headers', async () => {
    const clock = createManualClock(ORIGIN);
    emu = await startEmulator({ profile: profile(), clock });
    const ai = geminiClient(emu, KEY);
    const call = () => ai.models.generateContent({ model: 'gemini-2.5-flash', contents: 'hi' });
    for (let i = 0; i < 3; i++) {
      const r = await call();
      expect(r.sdkHttpResponse?.headers?.['x-ratelimit-limit-requests']).toBeUndefined();
    }
    clock.advance(13_000);
    const e = (await rejectionOf(call())) as ApiError;
    expect(e).toBeInstanceOf(ApiError);
    expect(e.status).toBe(429);
    const body = JSON.parse(e.message).error;
    expect(body.status).toBe('RESOURCE_EXHAUSTED');
    const quota = body.details.find((d: { '@type': string }) => d['@type'].endsWith('QuotaFailure'));
    expect(quota.violations[0].quotaId).toContain('PerMinute');
    const retry = body.details.find((d: { '@type': string }) => d['@type'].endsWith('RetryInfo'));
    expect(retry.retryDelay).toBe('47s');
  });

  it('gemini-compat: 429 body is a JSON array, which the OpenAI SDK reports as "(no body)"', async () => {
    const clock = createManualClock(ORIGIN);
    emu = await startEmulator({ profile: profile(), clock });
    const client = openaiClient(emu, 'gemini-compat', KEY);
    const call = () =>
      client.chat.completions.create({
        model: 'gemini-2.5-flash',
        messages: [{ role: 'user', content: 'hi' }],
      });
    for (let i = 0; i < 3; i++) await call();
    const e = (await rejectionOf(call())) as InstanceType<typeof OpenAI.RateLimitError>;
    expect(e).toBeInstanceOf(OpenAI.RateLimitError);
    expect(e.message).toBe('429 status code (no body)');
    const raw = await fetch(`${emu.baseURL('gemini-compat')}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gemini-2.5-flash', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(raw.status).toBe(429);
    expect(await raw.json()).toEqual([
      {
        error: {
          code: 429,
          message: 'Resource has been exhausted (e.g. check quota).',
          status: 'RESOURCE_EXHAUSTED',
        },
      },
    ]);
  });

  it('reset() clears the windows', async () => {
    const clock = createManualClock(ORIGIN);
    emu = await startEmulator({ profile: profile(), clock });
    const client = anthropicClient(emu, KEY);
    for (let i = 0; i < 3; i++) await ask(client);
    expect(await rejectionOf(ask(client))).toBeInstanceOf(Anthropic.RateLimitError);
    emu.reset();
    expect(emu.stats().totalCalls).toBe(0);
    await expect(ask(client)).resolves.toBeDefined();
  });
});
