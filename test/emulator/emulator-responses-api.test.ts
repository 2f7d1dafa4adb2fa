import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { EXPECTED_ARGS, openaiClient, rejectionOf, WEATHER_SCHEMA } from './sdk-clients.ts';

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ clock: createManualClock(0), seed: 5 });
});
afterAll(async () => {
  await emu.close();
});

const tools = [{ type: 'function' as const, name: 'get_weather', parameters: WEATHER_SCHEMA, strict: false }];

describe('OpenAI Responses API (POST /v1/responses) on the openai flavor', () => {
  it('function_call → function_call_output → output_text', async () => {
    const client = openaiClient(emu);
    const first = await client.responses.create({ model: 'gpt-4.1', input: 'Weather in Osaka?', tools });
    expect(first.status).toBe('completed');
    const call = first.output.find((o) => o.type === 'function_call');
    if (call?.type !== 'function_call') throw new Error('no function_call item');
    expect(JSON.parse(call.arguments)).toEqual(EXPECTED_ARGS);
    const second = await client.responses.create({
      model: 'gpt-4.1',
      tools,
      input: [
        { role: 'user', content: 'Weather in Osaka?' },
        call,
        { type: 'function_call_output', call_id: call.call_id, output: '15 degrees' },
      ],
    });
    expect(second.output_text).toBe('[gpt-4.1] The get_weather tool returned: "15 degrees".');
    expect(second.usage?.total_tokens).toBe(
      (second.usage?.input_tokens ?? 0) + (second.usage?.output_tokens ?? 0),
    );
  });

  it('streams typed events with increasing sequence_number, ending in response.completed', async () => {
    const stream = await openaiClient(emu).responses.create({
      model: 'gpt-4.1',
      input: 'Say something',
      stream: true,
    });
    const types: string[] = [];
    const seqs: number[] = [];
    let text = '';
    for await (const ev of stream) {
      types.push(ev.type);
      seqs.push(ev.sequence_number);
      if (ev.type === 'response.output_text.delta') text += ev.delta;
    }
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.completed');
    expect(types).toContain('response.output_text.done');
    expect(seqs).toEqual(seqs.map((_, i) => i));
    expect(text).toMatch(/^\[gpt-4\.1\] About "Say something":/);
  });

  it('max_output_tokens cuts the answer: status incomplete', async () => {
    const r = await openaiClient(emu).responses.create({
      model: 'gpt-4.1',
      input: 'Long please',
      max_output_tokens: 16,
    });
    expect(r.status).toBe('incomplete');
    expect(r.incomplete_details?.reason).toBe('max_output_tokens');
  });

  it('records the SDK X-Stainless-Retry-Count, so tests can prove how many attempts the SDK made', async () => {
    emu.reset();
    emu.addFault({ kind: 'rate_limit', match: { flavor: 'openai' }, retryAfterMs: 1 });
    const retrying = new OpenAI({ apiKey: 'sk-x', baseURL: emu.baseURL('openai'), maxRetries: 2 });
    const e = await rejectionOf(retrying.responses.create({ model: 'gpt-4.1', input: 'x' }));
    expect(e).toBeInstanceOf(OpenAI.RateLimitError);
    expect(emu.stats().calls.map((c) => c.sdkRetryCount)).toEqual([0, 1, 2]);
    emu.clearFaults();
  });
});
