import Anthropic from '@anthropic-ai/sdk';
import { ApiError } from '@google/genai';
import OpenAI from 'openai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { stillPendingAfter } from '../support/wait-for.ts';
import {
  anthropicClient,
  EXPECTED_ARGS,
  geminiClient,
  openaiClient,
  rejectionOf,
  WEATHER_SCHEMA,
} from './sdk-clients.ts';

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ clock: createManualClock(0), seed: 3 });
});
afterAll(async () => {
  await emu.close();
});
afterEach(() => emu.clearFaults());

describe('streaming: the real SDK stream parsers accept the emulator SSE', () => {
  it('anthropic: message_start → blocks → message_delta → message_stop, same content as non-streaming', async () => {
    const client = anthropicClient(emu);
    const body = {
      model: 'claude-sonnet-4-6',
      max_tokens: 200,
      messages: [{ role: 'user' as const, content: 'Stream it' }],
    };
    const types: string[] = [];
    const stream = await client.messages.create({ ...body, stream: true });
    let text = '';
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === 'content_block_delta' && ev.delta.type === 'text_delta') text += ev.delta.text;
    }
    expect(types[0]).toBe('message_start');
    expect(types.slice(-2)).toEqual(['message_delta', 'message_stop']);
    const plain = await client.messages.create(body);
    expect(text).toBe(plain.content[0]?.type === 'text' ? plain.content[0].text : '');
  });

  it('anthropic: a streamed tool_use assembles into the same input', async () => {
    const final = await anthropicClient(emu)
      .messages.stream({
        model: 'claude-sonnet-4-6',
        max_tokens: 200,
        tools: [{ name: 'get_weather', input_schema: WEATHER_SCHEMA }],
        messages: [{ role: 'user', content: 'Weather?' }],
      })
      .finalMessage();
    expect(final.stop_reason).toBe('tool_use');
    const block = final.content.find((b) => b.type === 'tool_use');
    expect(block?.type === 'tool_use' && block.input).toEqual(EXPECTED_ARGS);
    expect(final.usage.output_tokens).toBeGreaterThan(0);
  });

  it('openai: chunks, the include_usage chunk (choices: []) and data: [DONE]', async () => {
    const stream = await openaiClient(emu).chat.completions.create({
      model: 'gpt-4o-mini',
      stream: true,
      stream_options: { include_usage: true },
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: WEATHER_SCHEMA } }],
      messages: [{ role: 'user', content: 'Weather?' }],
    });
    let args = '';
    let finish: string | null = null;
    let last: OpenAI.ChatCompletionChunk | undefined;
    for await (const chunk of stream) {
      last = chunk;
      const choice = chunk.choices[0];
      if (choice?.delta.tool_calls?.[0]?.function?.arguments)
        args += choice.delta.tool_calls[0].function.arguments;
      if (choice?.finish_reason) finish = choice.finish_reason;
    }
    expect(finish).toBe('tool_calls');
    expect(JSON.parse(args)).toEqual(EXPECTED_ARGS);
    expect(last?.choices).toEqual([]);
    expect(last?.usage?.total_tokens).toBeGreaterThan(0);
    const raw = await fetch(`${emu.baseURL('vllm')}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer x' },
      body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(raw.headers.get('content-type')).toBe('text/event-stream');
    expect((await raw.text()).endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('gemini: :streamGenerateContent?alt=sse data chunks', async () => {
    const stream = await geminiClient(emu).models.generateContentStream({
      model: 'gemini-2.5-flash',
      contents: 'Stream it',
    });
    let text = '';
    let chunks = 0;
    let finish: string | undefined;
    for await (const chunk of stream) {
      chunks++;
      text += chunk.text ?? '';
      finish = chunk.candidates?.[0]?.finishReason ?? finish;
    }
    expect(chunks).toBeGreaterThan(1);
    expect(finish).toBe('STOP');
    const plain = await geminiClient(emu).models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'Stream it',
    });
    expect(text).toBe(plain.text);
  });
});

describe('stream_error: 200, a few events, then the provider in-stream error', () => {
  it('anthropic: event: error overloaded_error → APIError with no status', async () => {
    emu.addFault({ kind: 'stream_error', match: { flavor: 'anthropic' } });
    // Non-stream calls are not affected by a stream_error rule.
    await expect(
      anthropicClient(emu).messages.create({
        model: 'claude-sonnet-4-6',
        max_tokens: 50,
        messages: [{ role: 'user', content: 'x' }],
      }),
    ).resolves.toBeDefined();
    const stream = await anthropicClient(emu).messages.create({
      model: 'claude-sonnet-4-6',
      max_tokens: 50,
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    });
    const seen: string[] = [];
    const e = await rejectionOf(
      (async () => {
        for await (const ev of stream) seen.push(ev.type);
      })(),
    );
    expect(seen[0]).toBe('message_start');
    expect(seen).not.toContain('message_stop');
    expect(e).toBeInstanceOf(Anthropic.APIError);
    expect((e as InstanceType<typeof Anthropic.APIError>).status).toBeUndefined();
    expect((e as InstanceType<typeof Anthropic.APIError>).type).toBe('overloaded_error');
    expect(emu.stats().calls.at(-1)).toMatchObject({ status: 200, fault: 'stream_error', stream: true });
  });

  it('openai: data: {"error":…} → APIError with no status', async () => {
    emu.addFault({ kind: 'stream_error', match: { flavor: 'openai' } });
    const stream = await openaiClient(emu).chat.completions.create({
      model: 'm',
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    });
    const e = await rejectionOf(
      (async () => {
        for await (const _ of stream) void _;
      })(),
    );
    expect(e).toBeInstanceOf(OpenAI.APIError);
    expect((e as InstanceType<typeof OpenAI.APIError>).status).toBeUndefined();
  });

  it('gemini: an error chunk → ApiError 503', async () => {
    emu.addFault({ kind: 'stream_error', match: { flavor: 'gemini' } });
    const stream = await geminiClient(emu).models.generateContentStream({
      model: 'gemini-2.5-flash',
      contents: 'x',
    });
    const e = await rejectionOf(
      (async () => {
        for await (const _ of stream) void _;
      })(),
    );
    expect(e).toBeInstanceOf(ApiError);
    expect((e as ApiError).status).toBe(503);
  });

  it('stall_after_headers on a stream: the first events arrive, then nothing until our abort', async () => {
    emu.addFault({ kind: 'stall_after_headers', match: { flavor: 'anthropic' } });
    const ac = new AbortController();
    const stream = await anthropicClient(emu, 'sk-ant-test-key-0001').messages.create(
      {
        model: 'claude-sonnet-4-6',
        max_tokens: 50,
        stream: true,
        messages: [{ role: 'user', content: 'x' }],
      },
      { signal: ac.signal },
    );
    const seen: string[] = [];
    let firstEvent: () => void = () => {};
    const arrived = new Promise<void>((resolve) => {
      firstEvent = resolve;
    });
    const reading = (async () => {
      for await (const ev of stream) {
        seen.push(ev.type);
        firstEvent();
      }
    })();
    await arrived;
    // After the first events nothing more comes, however long we look (a slow machine looks longer).
    expect(await stillPendingAfter(reading, 300)).toBe(true);
    ac.abort();
    await reading.catch(() => undefined);
    expect(seen[0]).toBe('message_start');
    expect(seen).not.toContain('message_stop');
  });
});
