import Anthropic from '@anthropic-ai/sdk';
import type { ApiError } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { EmulatorFlavor, FaultRule } from '../../src/emulator/emulator-types.ts';
import { stillPendingAfter, waitFor } from '../support/wait-for.ts';
import { anthropicClient, geminiClient, openaiClient, rejectionOf } from './sdk-clients.ts';

const clock = createManualClock(Date.parse('2026-08-17T00:00:00Z'));
let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ clock, seed: 7 });
});
afterAll(async () => {
  await emu.close();
});
afterEach(() => {
  emu.clearFaults();
  emu.reset();
});

const PATHS: Record<EmulatorFlavor, string> = {
  anthropic: '/v1/messages',
  openai: '/chat/completions',
  vllm: '/chat/completions',
  ollama: '/chat/completions',
  'gemini-compat': '/chat/completions',
  gemini: '/v1beta/models/gemini-2.5-flash:generateContent',
};

/** A raw call, to check exact status, headers and body bytes. */
async function raw(flavor: EmulatorFlavor) {
  const body =
    flavor === 'anthropic'
      ? { model: 'claude-sonnet-4-6', max_tokens: 32, messages: [{ role: 'user', content: 'hi' }] }
      : flavor === 'gemini'
        ? { contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }
        : { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
  const res = await fetch(emu.baseURL(flavor) + PATHS[flavor], {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      authorization: 'Bearer sk-test-key-00000001',
      'x-goog-api-key': 'AIzaXYZ',
    },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  return {
    status: res.status,
    headers: res.headers,
    text,
    json: text ? JSON.parse(text.startsWith('<') ? 'null' : text) : undefined,
  };
}

const fault = (kind: FaultRule['kind'], flavor: EmulatorFlavor, extra: Partial<FaultRule> = {}) =>
  emu.addFault({ kind, match: { flavor }, ...extra });

/** Waits for I/O propagation only (a socket closing), never a cooldown, bounded far above any load. */
const until = (check: () => boolean) => waitFor(check, 'the emulator to record the call');

describe('HTTP error faults: exact status, body and headers per provider', () => {
  it('rate_limit: 429 with retry-after (real seconds) + retry-after-ms; Gemini puts it in RetryInfo only', async () => {
    for (const flavor of ['anthropic', 'openai', 'vllm', 'ollama'] as const) {
      fault('rate_limit', flavor, { retryAfterMs: 2_000 });
    }
    fault('rate_limit', 'gemini', { retryAfterMs: 2_500 });
    fault('rate_limit', 'gemini-compat', { retryAfterMs: 2_000 });
    const a = await raw('anthropic');
    expect(a.status).toBe(429);
    expect(a.headers.get('retry-after')).toBe('2');
    expect(a.headers.get('retry-after-ms')).toBe('2000');
    expect(a.json.error.type).toBe('rate_limit_error');
    expect(a.json.request_id).toBe(a.headers.get('request-id'));
    expect(a.headers.get('anthropic-ratelimit-requests-limit')).not.toBeNull();
    const o = await raw('openai');
    expect([o.status, o.json.error.type, o.json.error.code]).toEqual([
      429,
      'requests',
      'rate_limit_exceeded',
    ]);
    expect(o.json.error.message).toContain('Please try again in 2s.');
    expect(o.headers.get('retry-after')).toBe('2');
    expect(o.headers.get('x-ratelimit-limit-requests')).not.toBeNull();
    const v = await raw('vllm');
    expect([v.status, v.json.error.code, v.headers.get('retry-after')]).toEqual([429, 429, '2']);
    const l = await raw('ollama');
    expect([l.status, l.json.error.type, l.json.error.code]).toEqual([429, 'api_error', null]);
    const g = await raw('gemini');
    expect(g.status).toBe(429);
    expect(g.headers.get('retry-after')).toBeNull();
    expect(g.json.error.status).toBe('RESOURCE_EXHAUSTED');
    expect(g.json.error.details.at(-1)).toEqual({
      '@type': 'type.googleapis.com/google.rpc.RetryInfo',
      retryDelay: '2.5s',
    });
    const c = await raw('gemini-compat');
    expect(c.status).toBe(429);
    expect(Array.isArray(c.json)).toBe(true);
  });

  it('rate_limit_no_retry_after: the same 429 without retry-after headers', async () => {
    fault('rate_limit_no_retry_after', 'anthropic');
    fault('rate_limit_no_retry_after', 'openai');
    for (const flavor of ['anthropic', 'openai'] as const) {
      const r = await raw(flavor);
      expect(r.status).toBe(429);
      expect(r.headers.get('retry-after')).toBeNull();
      expect(r.headers.get('retry-after-ms')).toBeNull();
    }
  });

  it('spend_limit: Anthropic 429 enforced_spend_limit_reached, no retry-after, x-should-retry false', async () => {
    fault('spend_limit', 'anthropic');
    const e = (await rejectionOf(
      anthropicClient(emu).messages.create({
        model: 'claude-sonnet-4-6',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'x' }],
      }),
    )) as InstanceType<typeof Anthropic.RateLimitError>;
    expect(e).toBeInstanceOf(Anthropic.RateLimitError);
    expect(e.constructor.name).toBe('EnforcedSpendLimitReachedError');
    expect(e.errorCode).toBe('enforced_spend_limit_reached');
    expect(e.headers?.get('retry-after')).toBeNull();
    expect(e.headers?.get('x-should-retry')).toBe('false');
    fault('spend_limit', 'openai');
    fault('spend_limit', 'gemini');
    const o = await raw('openai');
    expect([o.status, o.json.error.type, o.json.error.code]).toEqual([
      429,
      'insufficient_quota',
      'organization_spend_limit_exceeded',
    ]);
    expect(o.headers.get('retry-after')).toBeNull();
    const g = await raw('gemini');
    expect(g.status).toBe(429);
    expect(g.json.error.details[0].violations[0].quotaId).toContain('PerDay');
  });

  it('overloaded: Anthropic 529 overloaded_error, OpenAI 503 engine overloaded, Gemini 503 UNAVAILABLE', async () => {
    fault('overloaded', 'anthropic');
    fault('overloaded', 'openai');
    fault('overloaded', 'gemini');
    const e = await rejectionOf(
      anthropicClient(emu).messages.create({
        model: 'claude-sonnet-4-6',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(e).toBeInstanceOf(Anthropic.OverloadedError);
    expect((e as InstanceType<typeof Anthropic.OverloadedError>).status).toBe(529);
    expect((e as InstanceType<typeof Anthropic.OverloadedError>).type).toBe('overloaded_error');
    const o = await raw('openai');
    expect(o.status).toBe(503);
    expect(o.json.error.message).toBe('The engine is currently overloaded, please try again later.');
    const g = (await rejectionOf(
      geminiClient(emu).models.generateContent({ model: 'gemini-2.5-flash', contents: 'x' }),
    )) as ApiError;
    expect(g.status).toBe(503);
    expect(JSON.parse(g.message).error.status).toBe('UNAVAILABLE');
  });

  it("server_busy: Ollama's 503 body, two spaces", async () => {
    fault('server_busy', 'ollama');
    const r = await raw('ollama');
    expect(r.status).toBe(503);
    expect(r.text).toBe(
      '{"error":{"message":"server busy, please try again.  maximum pending requests exceeded","type":"api_error","param":null,"code":null}}',
    );
  });

  it('server_error_empty: 500 with an empty body (vLLM engine death)', async () => {
    fault('server_error_empty', 'vllm');
    const e = (await rejectionOf(
      openaiClient(emu, 'vllm').chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
      }),
    )) as InstanceType<typeof OpenAI.InternalServerError>;
    expect(e).toBeInstanceOf(OpenAI.InternalServerError);
    expect(e.message).toBe('500 status code (no body)');
  });

  it('gateway_timeout: 504 — Anthropic timeout_error, Gemini DEADLINE_EXCEEDED', async () => {
    fault('gateway_timeout', 'anthropic');
    fault('gateway_timeout', 'gemini');
    const a = await raw('anthropic');
    expect([a.status, a.json.error.type]).toEqual([504, 'timeout_error']);
    const g = await raw('gemini');
    expect([g.status, g.json.error.status]).toEqual([504, 'DEADLINE_EXCEEDED']);
  });

  it('html_502: a 502 HTML page', async () => {
    fault('html_502', 'openai');
    const e = (await rejectionOf(
      openaiClient(emu).chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    )) as InstanceType<typeof OpenAI.InternalServerError>;
    expect(e.status).toBe(502);
    expect(e.message).toMatch(/^502 <html>/);
  });

  it('bad_key: Anthropic 401, OpenAI 401 invalid_api_key (masked key), Gemini 400 API_KEY_INVALID', async () => {
    fault('bad_key', 'anthropic');
    fault('bad_key', 'openai');
    fault('bad_key', 'gemini');
    const a = await rejectionOf(
      anthropicClient(emu).messages.create({
        model: 'claude-sonnet-4-6',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(a).toBeInstanceOf(Anthropic.AuthenticationError);
    const key = 'sk-proj-abcdefghijklmnop1234';
    const o = (await rejectionOf(
      openaiClient(emu, 'openai', key).chat.completions.create({
        model: 'm',
        messages: [{ role: 'user', content: 'x' }],
      }),
    )) as InstanceType<typeof OpenAI.AuthenticationError>;
    expect(o).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(o.code).toBe('invalid_api_key');
    expect(o.message).not.toContain(key);
    expect(o.message).toContain('sk-proj-…1234');
    const g = (await rejectionOf(
      geminiClient(emu).models.generateContent({ model: 'gemini-2.5-flash', contents: 'x' }),
    )) as ApiError;
    expect(g.status).toBe(400);
    const body = JSON.parse(g.message).error;
    expect(body.status).toBe('INVALID_ARGUMENT');
    expect(body.details[0].reason).toBe('API_KEY_INVALID');
  });

  it('credit_exhausted as a fault: the provider credit error without touching the ledger', async () => {
    fault('credit_exhausted', 'anthropic', { count: 1 });
    const a = await raw('anthropic');
    expect(a.status).toBe(400);
    expect(a.json.error.message).toContain('credit balance is too low');
    expect((await raw('anthropic')).status).toBe(200);
  });
});

describe('connection faults', () => {
  it('connection_reset: socket destroyed before any byte → APIConnectionError / fetch failed', async () => {
    fault('connection_reset', 'anthropic');
    fault('connection_reset', 'gemini');
    const a = await rejectionOf(
      anthropicClient(emu).messages.create({
        model: 'claude-sonnet-4-6',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(a).toBeInstanceOf(Anthropic.APIConnectionError);
    expect(a).not.toBeInstanceOf(Anthropic.APIConnectionTimeoutError);
    const g = (await rejectionOf(
      geminiClient(emu).models.generateContent({ model: 'gemini-2.5-flash', contents: 'x' }),
    )) as Error;
    expect(g).toBeInstanceOf(TypeError);
    expect(g.message).toBe('fetch failed');
    expect(emu.stats().byStatus.reset).toBe(2);
  });

  it('connection_refused: only that flavor listener closes for the window, then reopens on the same port', async () => {
    const url = emu.baseURL('openai');
    emu.addFault({ kind: 'connection_refused', match: { flavor: 'openai' }, window: { toMs: 30_000 } });
    const client = openaiClient(emu);
    const call = () =>
      client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    const e = (await rejectionOf(call())) as InstanceType<typeof OpenAI.APIConnectionError>;
    expect(e).toBeInstanceOf(OpenAI.APIConnectionError);
    // APIConnectionError ← TypeError('fetch failed') ← the socket error.
    expect(((e.cause as Error).cause as NodeJS.ErrnoException).code).toBe('ECONNREFUSED');
    // Other flavors keep answering.
    expect((await raw('anthropic')).status).toBe(200);
    clock.advance(30_000);
    expect(emu.baseURL('openai')).toBe(url);
    await expect(call()).resolves.toBeDefined();
  });

  it('hang_before_headers: the request is held until the SDK timeout fires', async () => {
    fault('hang_before_headers', 'anthropic');
    const client = anthropicClient(emu, 'sk-ant-test-key-0001', 150);
    const e = await rejectionOf(
      client.messages.create({
        model: 'claude-sonnet-4-6',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    expect(e).toBeInstanceOf(Anthropic.APIConnectionTimeoutError);
    await until(() => emu.stats().byStatus.hang === 1);
    expect(emu.stats().calls[0]).toMatchObject({ status: 'hang', fault: 'hang_before_headers' });
  });

  it('stall_after_headers: headers and part of the body arrive, the body never completes', async () => {
    fault('stall_after_headers', 'openai');
    // Raw: the status and headers arrive, then a first slice of the JSON, then nothing.
    const ac = new AbortController();
    const res = await fetch(`${emu.baseURL('openai')}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-x' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
      signal: ac.signal,
    });
    expect(res.status).toBe(200);
    expect(res.headers.get('x-request-id')).toMatch(/^req_/);
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toMatch(/^\{"id":"chatcmpl-/);
    // Nothing more comes (however long we look; a slower machine only looks longer), until our abort.
    const rest = reader.read();
    expect(await stillPendingAfter(rest, 300)).toBe(true);
    ac.abort();
    await expect(rest).rejects.toThrow();

    // Through the SDK: its own timeout is cleared when the headers arrive, so it never cuts the
    // stalled body: outlast it, and only our abort ends the read.
    const sdkAbort = new AbortController();
    const response = await openaiClient(emu, 'openai', 'sk-openai-test-key-0001', 1_000)
      .chat.completions.create(
        { model: 'm', messages: [{ role: 'user', content: 'x' }] },
        { signal: sdkAbort.signal },
      )
      .asResponse();
    expect(response.status).toBe(200);
    const body = response.text();
    expect(await stillPendingAfter(body, 1_500)).toBe(true);
    sdkAbort.abort();
    const e = await rejectionOf(body);
    expect(e).not.toBeInstanceOf(OpenAI.APIConnectionTimeoutError);
    expect((e as Error).name).toBe('AbortError');
    await until(() => emu.stats().byStatus.stall === 2);
  });
});

describe('requests no engine swap can fix', () => {
  it('an absurd max_tokens is the provider 400, not a transient fault', async () => {
    const o = (await rejectionOf(
      openaiClient(emu).chat.completions.create({
        model: 'gpt-4o-mini',
        max_tokens: 10_000_000,
        messages: [{ role: 'user', content: 'x' }],
      }),
    )) as InstanceType<typeof OpenAI.BadRequestError>;
    expect(o).toBeInstanceOf(OpenAI.BadRequestError);
    expect(o.type).toBe('invalid_request_error');
    expect(o.message).toContain('max_tokens is too large: 10000000');
    const a = await fetch(`${emu.baseURL('anthropic')}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'sk-x' },
      body: JSON.stringify({
        model: 'claude-sonnet-4-6',
        max_tokens: 10_000_000,
        messages: [{ role: 'user', content: 'x' }],
      }),
    });
    expect(a.status).toBe(400);
    expect((await a.json()).error.type).toBe('invalid_request_error');
    const g = (await rejectionOf(
      geminiClient(emu).models.generateContent({
        model: 'gemini-2.5-flash',
        contents: 'x',
        config: { maxOutputTokens: 1_000_000 },
      }),
    )) as ApiError;
    expect(g.status).toBe(400);
    expect(JSON.parse(g.message).error.status).toBe('INVALID_ARGUMENT');
    const missing = await fetch(`${emu.baseURL('anthropic')}/v1/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-api-key': 'sk-x' },
      body: JSON.stringify({ model: 'claude-sonnet-4-6', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(missing.status).toBe(400);
    expect((await missing.json()).error.message).toBe('max_tokens: Field required');
  });
});
