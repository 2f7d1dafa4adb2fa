import Anthropic from '@anthropic-ai/sdk';
import { ApiError } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { anthropicClient, geminiClient, openaiClient, rejectionOf } from './sdk-clients.ts';

const KEY = 'sk-credit-key-0001';
let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({
    clock: createManualClock(0),
    profile: { acceptAnyKey: true, keys: [{ alias: 'funded', key: KEY, credit: 10 }] },
  });
});
afterAll(async () => {
  await emu.close();
});
beforeEach(() => {
  emu.setCredit('funded', 10);
});

const user = [{ role: 'user' as const, content: 'Tell me something' }];

describe('credit: input+output tokens are deducted; a spent key gets the provider exact credit error', () => {
  it('anthropic: 400 invalid_request_error "credit balance is too low"', async () => {
    const client = anthropicClient(emu, KEY);
    const call = () => client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 64, messages: user });
    await call(); // 10 tokens of credit: this call spends more than that
    const e = (await rejectionOf(call())) as InstanceType<typeof Anthropic.BadRequestError>;
    expect(e).toBeInstanceOf(Anthropic.BadRequestError);
    expect(e.status).toBe(400);
    expect(e.type).toBe('invalid_request_error');
    expect(e.error).toMatchObject({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message:
          'Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits.',
      },
    });
    expect((e.error as { request_id: string }).request_id).toBe(e.requestID);
    // Topping up restores service; the key is named by alias or by the key itself.
    emu.setCredit(KEY, null);
    await expect(call()).resolves.toBeDefined();
  });

  for (const flavor of ['openai', 'vllm', 'ollama'] as const) {
    it(`${flavor}: 429 "You exceeded your current quota" in the server's envelope`, async () => {
      const client = openaiClient(emu, flavor, KEY);
      const call = () => client.chat.completions.create({ model: 'm', messages: user });
      await call();
      const e = (await rejectionOf(call())) as InstanceType<typeof OpenAI.RateLimitError>;
      expect(e).toBeInstanceOf(OpenAI.RateLimitError);
      // vLLM's envelope carries the HTTP status as an int code; Ollama's NewError() always says api_error/null.
      if (flavor === 'vllm') expect(e.code).toBe(429);
      else if (flavor === 'ollama') expect([e.type, e.code]).toEqual(['api_error', null]);
      else expect(e.code).toBe('insufficient_quota');
      expect(e.message).toContain('You exceeded your current quota');
      if (flavor === 'openai') {
        expect(e.type).toBe('insufficient_quota');
        expect(e.message).toBe(
          '429 You exceeded your current quota, please check your plan and billing details. For more information on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.',
        );
      }
    });
  }

  it('gemini: 429 RESOURCE_EXHAUSTED with a PerDay quotaId', async () => {
    const ai = geminiClient(emu, KEY);
    const call = () => ai.models.generateContent({ model: 'gemini-2.5-pro', contents: 'Tell me something' });
    await call();
    const e = (await rejectionOf(call())) as ApiError;
    expect(e).toBeInstanceOf(ApiError);
    expect(e.status).toBe(429);
    const body = JSON.parse(e.message).error;
    expect(body.status).toBe('RESOURCE_EXHAUSTED');
    expect(body.details[0].violations[0].quotaId).toContain('PerDay');
    expect(body.details.some((d: { '@type': string }) => d['@type'].endsWith('RetryInfo'))).toBe(false);
  });

  it('gemini-compat: the same error, array-wrapped', async () => {
    const client = openaiClient(emu, 'gemini-compat', KEY);
    const call = () => client.chat.completions.create({ model: 'gemini-2.5-pro', messages: user });
    await call();
    const e = (await rejectionOf(call())) as InstanceType<typeof OpenAI.RateLimitError>;
    expect(e.status).toBe(429);
    expect(e.message).toBe('429 status code (no body)');
    const raw = await fetch(`${emu.baseURL('gemini-compat')}/chat/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gemini-2.5-pro', messages: user }),
    });
    const body = await raw.json();
    expect(Array.isArray(body)).toBe(true);
    expect(body[0].error.status).toBe('RESOURCE_EXHAUSTED');
    expect(body[0].error.details[0].violations[0].quotaId).toContain('PerDay');
  });

  it('the control endpoint sets credit; bad input is a 400 naming the field', async () => {
    const post = (body: unknown) =>
      fetch(`${emu.controlURL}/_emulator/credit`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    expect((await post({ key: 'funded', tokens: 0 })).status).toBe(200);
    const client = anthropicClient(emu, KEY);
    const call = () => client.messages.create({ model: 'claude-sonnet-4-6', max_tokens: 64, messages: user });
    expect(await rejectionOf(call())).toBeInstanceOf(Anthropic.BadRequestError);
    expect((await post({ key: 'funded', tokens: null })).status).toBe(200);
    await expect(call()).resolves.toBeDefined();
    const bad = await post({ key: 'funded', tokens: 'lots' });
    expect(bad.status).toBe(400);
    expect(await bad.json()).toMatchObject({ field: 'tokens' });
    const noKey = await post({ tokens: 5 });
    expect(await noKey.json()).toMatchObject({ field: 'key' });
  });
});
