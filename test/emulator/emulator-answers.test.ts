import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { hash32, hash32Of } from '../../src/core/seeded-random.ts';
import { anthropicClient, EXPECTED_ARGS, geminiClient, openaiClient, WEATHER_SCHEMA } from './sdk-clients.ts';

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ seed: 42 });
});
afterAll(async () => {
  await emu.close();
});

describe('every flavor answers through its real SDK, with a tool-call round trip', () => {
  it('anthropic: text, then tool_use → tool_result → text quoting the result', async () => {
    const client = anthropicClient(emu);
    const plain = await client.messages.create({
      model: 'claude-sonnet-4-6',
      max_tokens: 256,
      messages: [{ role: 'user', content: 'What is the weather plan for Osaka?' }],
    });
    expect(plain.stop_reason).toBe('end_turn');
    const text = plain.content.find((b) => b.type === 'text');
    expect(text?.type === 'text' && text.text).toMatch(
      /^\[claude-sonnet-4-6\] About "What is the weather plan for Osaka\?"/,
    );
    expect(plain.usage.input_tokens).toBe(Math.ceil('What is the weather plan for Osaka?'.length / 4));
    expect(plain._request_id).toMatch(/^req_011C/);

    const tools = [{ name: 'get_weather', description: 'weather', input_schema: WEATHER_SCHEMA }];
    const first = await client.messages.create({
      model: 'claude-sonnet-4-6',
      max_tokens: 256,
      tools,
      messages: [{ role: 'user', content: 'Weather in Osaka?' }],
    });
    expect(first.stop_reason).toBe('tool_use');
    const call = first.content.find((b) => b.type === 'tool_use');
    if (call?.type !== 'tool_use') throw new Error('no tool_use block');
    expect(call.name).toBe('get_weather');
    expect(call.input).toEqual(EXPECTED_ARGS);
    expect(call.id).toMatch(/^toolu_01/);

    const second = await client.messages.create({
      model: 'claude-sonnet-4-6',
      max_tokens: 256,
      tools,
      messages: [
        { role: 'user', content: 'Weather in Osaka?' },
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: call.id, content: '15 degrees and sunny' }],
        },
      ],
    });
    expect(second.stop_reason).toBe('end_turn');
    const final = second.content[0];
    expect(final?.type === 'text' && final.text).toBe(
      '[claude-sonnet-4-6] The get_weather tool returned: "15 degrees and sunny".',
    );
  });

  for (const flavor of ['openai', 'vllm', 'ollama', 'gemini-compat'] as const) {
    it(`${flavor}: chat completion, then tool_calls → tool message → text`, async () => {
      const client = openaiClient(emu, flavor);
      const model = flavor === 'gemini-compat' ? 'gemini-2.5-flash' : 'gpt-4o-mini';
      const tools = [
        { type: 'function' as const, function: { name: 'get_weather', parameters: WEATHER_SCHEMA } },
      ];
      const first = await client.chat.completions.create({
        model,
        tools,
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'Weather in Osaka?' },
        ],
      });
      const choice = first.choices[0]!;
      expect(choice.finish_reason).toBe('tool_calls');
      const call = choice.message.tool_calls?.[0];
      if (call?.type !== 'function') throw new Error('no function tool call');
      expect(typeof call.function.arguments).toBe('string');
      expect(JSON.parse(call.function.arguments)).toEqual(EXPECTED_ARGS);

      const second = await client.chat.completions.create({
        model,
        tools,
        messages: [
          { role: 'user', content: 'Weather in Osaka?' },
          { role: 'assistant', content: null, tool_calls: [call] },
          { role: 'tool', tool_call_id: call.id, content: '15 degrees and sunny' },
        ],
      });
      expect(second.choices[0]!.finish_reason).toBe('stop');
      expect(second.choices[0]!.message.content).toBe(
        `[${model}] The get_weather tool returned: "15 degrees and sunny".`,
      );
      expect(second.usage!.total_tokens).toBe(second.usage!.prompt_tokens + second.usage!.completion_tokens);
    });
  }

  it('gemini: generateContent, then functionCall → functionResponse → text', async () => {
    const ai = geminiClient(emu);
    const config = {
      tools: [{ functionDeclarations: [{ name: 'get_weather', parametersJsonSchema: WEATHER_SCHEMA }] }],
    };
    const first = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      contents: 'Weather in Osaka?',
      config,
    });
    const fc = first.functionCalls?.[0];
    expect(fc?.name).toBe('get_weather');
    expect(fc?.args).toEqual(EXPECTED_ARGS);
    const second = await ai.models.generateContent({
      model: 'gemini-2.5-flash',
      config,
      contents: [
        { role: 'user', parts: [{ text: 'Weather in Osaka?' }] },
        { role: 'model', parts: [{ functionCall: { name: 'get_weather', args: fc!.args! } }] },
        {
          role: 'user',
          parts: [{ functionResponse: { name: 'get_weather', response: { result: '15 degrees' } } }],
        },
      ],
    });
    expect(second.text).toBe('[gemini-2.5-flash] The get_weather tool returned: "{"result":"15 degrees"}".');
    expect(second.candidates?.[0]?.finishReason).toBe('STOP');
    expect(second.usageMetadata?.totalTokenCount).toBeGreaterThan(0);
  });

  it('answers are deterministic for a seed and respect max_tokens', async () => {
    const client = anthropicClient(emu);
    const ask = (max: number) =>
      client.messages.create({
        model: 'claude-haiku-4-5',
        max_tokens: max,
        messages: [{ role: 'user', content: 'Same question' }],
      });
    const [a, b, cut] = await Promise.all([ask(500), ask(500), ask(5)]);
    expect(a.content).toEqual(b.content);
    expect(cut.stop_reason).toBe('max_tokens');
    expect(cut.usage.output_tokens).toBe(5);
    const t = cut.content[0];
    expect(t?.type === 'text' && t.text.length).toBe(20);
  });
});

describe('the answer seed', () => {
  it('hash32Of hashes the parts as hash32 hashes them joined, so answers keep their seed (fast-check, fixed seed)', () => {
    fc.assert(
      fc.property(fc.array(fc.string({ unit: 'grapheme' })), fc.integer(), (parts, seed) => {
        expect(hash32Of(parts, seed)).toBe(hash32(parts.join(''), seed));
      }),
      { seed: 4242, numRuns: 2_000 },
    );
  });
});
