import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { createEngine } from '../../src/engines/create-engine.ts';
import type { EngineRequest } from '../../src/core/engine-types.ts';
import { type RawFixtureServer, startRawFixture } from './raw-fixture-server.ts';

// Exact request shapes on the wire, and exact provider bodies (provider-wire-facts §1.2, §2.1, §3.1)
// read back, through the real SDKs against a raw node:http fixture.

const KEY = 'sk-test-wire-mapping-000000000001';

const weatherTool = {
  name: 'get_weather',
  description: 'Current weather of a city',
  parameters: {
    type: 'object',
    properties: { location: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
    required: ['location'],
  },
} as const;

const conversation: EngineRequest = {
  system: 'You are terse.',
  messages: [
    { role: 'user', content: 'Weather in Paris and Rome?' },
    { role: 'assistant', content: 'Checking both.' },
    { role: 'tool_call', call: { id: 'call_1', name: 'get_weather', arguments: { location: 'Paris' } } },
    { role: 'tool_call', call: { id: 'call_2', name: 'get_weather', arguments: { location: 'Rome' } } },
    { role: 'tool_result', toolCallId: 'call_1', toolName: 'get_weather', content: '15 degrees' },
    {
      role: 'tool_result',
      toolCallId: 'call_2',
      toolName: 'get_weather',
      content: 'no station',
      isError: true,
    },
  ],
  tools: [weatherTool],
  maxTokens: 300,
  temperature: 0.2,
  idempotencyKey: 'idem-wire-1',
};

describe('wire mapping through the real SDKs', () => {
  let fx: RawFixtureServer;
  beforeAll(async () => {
    fx = await startRawFixture();
  });
  afterAll(() => fx.close());

  it('anthropic: one assistant turn of text + tool_use blocks, one user turn of tool_result blocks; reads §1.2', async () => {
    fx.reply(() => ({
      status: 200,
      headers: {
        'request-id': 'req_011CSLsW7mFqvHHnzrKdKjAE',
        'anthropic-ratelimit-requests-limit': '1000',
        'anthropic-ratelimit-requests-remaining': '999',
        'anthropic-ratelimit-requests-reset': '2030-08-21T12:40:59Z',
        'anthropic-ratelimit-input-tokens-limit': '80000',
        'anthropic-ratelimit-input-tokens-remaining': '80000',
        'anthropic-ratelimit-input-tokens-reset': '2030-08-21T12:40:59Z',
      },
      body: {
        id: 'msg_01Aq9w938a90dw8q',
        type: 'message',
        role: 'assistant',
        model: 'claude-sonnet-4-6',
        content: [
          { type: 'text', text: "I'll check the weather." },
          {
            type: 'tool_use',
            id: 'toolu_01A09q90qw90lq917835lq9',
            name: 'get_weather',
            input: { location: 'Paris' },
          },
        ],
        stop_reason: 'tool_use',
        stop_sequence: null,
        usage: {
          input_tokens: 412,
          output_tokens: 57,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
        },
      },
    }));
    // The run's clock is a scenario's (months before the wall clock); the reset instant is wall-clock,
    // 30 s after the (injected) wall now, so it lands 30 s after the run's now.
    const runStart = Date.parse('2026-03-02T09:00:00+09:00');
    const engine = createEngine(
      { id: 'a', provider: 'anthropic', model: 'claude-sonnet-4-6', apiKey: KEY, baseURL: fx.url },
      { clock: createManualClock(runStart), wallNow: () => Date.parse('2030-08-21T12:40:29Z') },
    );
    const result = await engine.call(conversation);
    const seen = fx.seen.at(-1)!;
    expect(seen.url).toBe('/v1/messages');
    expect(seen.headers['idempotency-key']).toBe('idem-wire-1');
    expect(seen.headers['x-stainless-retry-count']).toBe('0');
    expect(seen.body).toMatchObject({
      model: 'claude-sonnet-4-6',
      max_tokens: 300,
      temperature: 0.2,
      system: 'You are terse.',
      tools: [
        {
          name: 'get_weather',
          description: 'Current weather of a city',
          input_schema: weatherTool.parameters,
        },
      ],
      messages: [
        { role: 'user', content: 'Weather in Paris and Rome?' },
        {
          role: 'assistant',
          content: [
            { type: 'text', text: 'Checking both.' },
            { type: 'tool_use', id: 'call_1', name: 'get_weather', input: { location: 'Paris' } },
            { type: 'tool_use', id: 'call_2', name: 'get_weather', input: { location: 'Rome' } },
          ],
        },
        {
          role: 'user',
          content: [
            { type: 'tool_result', tool_use_id: 'call_1', content: '15 degrees' },
            { type: 'tool_result', tool_use_id: 'call_2', content: 'no station', is_error: true },
          ],
        },
      ],
    });
    expect((seen.body as { messages: unknown[] }).messages).toHaveLength(3);
    expect(result).toMatchObject({
      text: "I'll check the weather.",
      toolCalls: [
        { id: 'toolu_01A09q90qw90lq917835lq9', name: 'get_weather', arguments: { location: 'Paris' } },
      ],
      stopReason: 'tool_use',
      usage: { inputTokens: 412, outputTokens: 57 },
      model: 'claude-sonnet-4-6',
      requestId: 'req_011CSLsW7mFqvHHnzrKdKjAE',
      endpoint: { id: 'a', provider: 'anthropic' },
    });
    expect(result.rateLimit.requests).toMatchObject({
      limit: 1000,
      remaining: 999,
      resetAt: runStart + 30_000,
    });
    expect(result.rateLimit.inputTokens).toMatchObject({ limit: 80000, remaining: 80000 });
    expect(Object.isFrozen(result)).toBe(true);
    expect(JSON.stringify(result)).not.toContain(KEY);
  });

  const openaiBody = (args: string) => ({
    id: 'chatcmpl-A652Fhuqsr1kskKe5B63M0eiw3842',
    object: 'chat.completion',
    created: 1726012687,
    model: 'gpt-4o-2024-08-06',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: null,
          refusal: null,
          tool_calls: [
            { id: 'call_abc123', type: 'function', function: { name: 'get_weather', arguments: args } },
          ],
        },
        logprobs: null,
        finish_reason: 'tool_calls',
      },
    ],
    usage: { prompt_tokens: 82, completion_tokens: 17, total_tokens: 99 },
  });

  it('openai: assistant message with tool_calls, one role:tool message per result; reads §2.1 and the x-ratelimit headers', async () => {
    fx.reply(() => ({
      status: 200,
      headers: {
        'x-request-id': 'req_oa_1',
        'x-ratelimit-limit-requests': '60',
        'x-ratelimit-remaining-requests': '59',
        'x-ratelimit-reset-requests': '1s',
        'x-ratelimit-limit-tokens': '150000',
        'x-ratelimit-remaining-tokens': '149984',
        'x-ratelimit-reset-tokens': '6m0s',
      },
      body: openaiBody('{"location":"Paris"}'),
    }));
    const engine = createEngine({
      id: 'o',
      provider: 'openai',
      model: 'gpt-4o',
      apiKey: KEY,
      baseURL: `${fx.url}/v1`,
    });
    const result = await engine.call(conversation);
    const seen = fx.seen.at(-1)!;
    expect(seen.url).toBe('/v1/chat/completions');
    expect(seen.headers['idempotency-key']).toBe('idem-wire-1');
    expect(seen.body).toMatchObject({ model: 'gpt-4o', max_completion_tokens: 300, temperature: 0.2 });
    expect((seen.body as { messages: unknown }).messages).toEqual([
      { role: 'system', content: 'You are terse.' },
      { role: 'user', content: 'Weather in Paris and Rome?' },
      {
        role: 'assistant',
        content: 'Checking both.',
        tool_calls: [
          {
            id: 'call_1',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"location":"Paris"}' },
          },
          {
            id: 'call_2',
            type: 'function',
            function: { name: 'get_weather', arguments: '{"location":"Rome"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_1', content: '15 degrees' },
      { role: 'tool', tool_call_id: 'call_2', content: 'no station' },
    ]);
    expect((seen.body as { tools: unknown }).tools).toEqual([
      {
        type: 'function',
        function: {
          name: 'get_weather',
          description: 'Current weather of a city',
          parameters: weatherTool.parameters,
        },
      },
    ]);
    expect(result).toMatchObject({
      text: '',
      toolCalls: [{ id: 'call_abc123', name: 'get_weather', arguments: { location: 'Paris' } }],
      stopReason: 'tool_use',
      usage: { inputTokens: 82, outputTokens: 17 },
      model: 'gpt-4o-2024-08-06',
      requestId: 'req_oa_1',
    });
    expect(result.rateLimit.requests).toMatchObject({ limit: 60, remaining: 59 });
    expect(result.rateLimit.tokens).toMatchObject({ limit: 150000, remaining: 149984 });
  });

  it('openai-compatible: sends max_tokens, and keeps malformed tool arguments as { _raw } instead of throwing', async () => {
    const broken = '{"location": "Par';
    fx.reply(() => ({ status: 200, body: openaiBody(broken) }));
    const engine = createEngine({
      id: 'v',
      provider: 'openai-compatible',
      flavor: 'vllm',
      model: 'qwen',
      baseURL: `${fx.url}/v1`,
    });
    const result = await engine.call({ ...conversation, temperature: undefined });
    const seen = fx.seen.at(-1)!;
    expect(seen.body).toMatchObject({ max_tokens: 300 });
    expect(seen.body).not.toHaveProperty('max_completion_tokens');
    expect(seen.body).not.toHaveProperty('temperature');
    expect(result.toolCalls).toEqual([
      { id: 'call_abc123', name: 'get_weather', arguments: { _raw: broken } },
    ]);
    expect(result.endpoint).toMatchObject({
      provider: 'openai-compatible',
      flavor: 'vllm',
      keyFingerprint: 'none',
    });

    // The raw arguments travel back verbatim when the conversation continues.
    await engine.call({
      messages: [
        { role: 'user', content: 'go' },
        { role: 'tool_call', call: result.toolCalls[0]! },
        { role: 'tool_result', toolCallId: 'call_abc123', toolName: 'get_weather', content: 'ok' },
      ],
      maxTokens: 10,
      idempotencyKey: 'idem-wire-2',
    });
    const again = fx.seen.at(-1)!.body as {
      messages: { tool_calls?: { function: { arguments: string } }[] }[];
    };
    expect(again.messages[1]?.tool_calls?.[0]?.function.arguments).toBe(broken);
  });

  it('gemini: one model turn of text + functionCall parts, one user turn of functionResponse parts; reads §3.1', async () => {
    fx.reply(() => ({
      status: 200,
      body: {
        candidates: [
          {
            content: {
              role: 'model',
              parts: [
                { text: 'Looking up both.' },
                { functionCall: { name: 'get_weather', args: { location: 'Paris' } } },
                { functionCall: { name: 'get_weather', args: { location: 'Rome' } } },
              ],
            },
            finishReason: 'STOP',
            index: 0,
          },
        ],
        usageMetadata: {
          promptTokenCount: 4,
          candidatesTokenCount: 9,
          totalTokenCount: 13,
          thoughtsTokenCount: 0,
        },
        modelVersion: 'gemini-2.5-flash',
        responseId: 'resp-gemini-1',
      },
    }));
    const engine = createEngine({
      id: 'g',
      provider: 'gemini',
      model: 'gemini-2.5-flash',
      apiKey: KEY,
      baseURL: fx.url,
    });
    const result = await engine.call(conversation);
    const seen = fx.seen.at(-1)!;
    expect(seen.url).toBe('/v1beta/models/gemini-2.5-flash:generateContent');
    expect(seen.headers['idempotency-key']).toBe('idem-wire-1');
    expect(seen.headers['x-goog-api-key']).toBe(KEY);
    expect(seen.body).toMatchObject({
      systemInstruction: { parts: [{ text: 'You are terse.' }] },
      generationConfig: { maxOutputTokens: 300, temperature: 0.2 },
      tools: [
        {
          functionDeclarations: [
            {
              name: 'get_weather',
              description: 'Current weather of a city',
              parametersJsonSchema: weatherTool.parameters,
            },
          ],
        },
      ],
    });
    expect((seen.body as { contents: unknown }).contents).toEqual([
      { role: 'user', parts: [{ text: 'Weather in Paris and Rome?' }] },
      {
        role: 'model',
        parts: [
          { text: 'Checking both.' },
          { functionCall: { name: 'get_weather', args: { location: 'Paris' } } },
          { functionCall: { name: 'get_weather', args: { location: 'Rome' } } },
        ],
      },
      {
        role: 'user',
        parts: [
          { functionResponse: { name: 'get_weather', response: { output: '15 degrees' } } },
          { functionResponse: { name: 'get_weather', response: { error: 'no station' } } },
        ],
      },
    ]);
    expect(result).toMatchObject({
      text: 'Looking up both.',
      toolCalls: [
        { id: 'get_weather-0', name: 'get_weather', arguments: { location: 'Paris' } },
        { id: 'get_weather-1', name: 'get_weather', arguments: { location: 'Rome' } },
      ],
      stopReason: 'tool_use',
      usage: { inputTokens: 4, outputTokens: 9 },
      model: 'gemini-2.5-flash',
      requestId: 'resp-gemini-1',
    });
    expect(result.rateLimit).toEqual({});
  });

  it.each([
    ['anthropic', { stop_reason: 'max_tokens' }, 'max_tokens'],
    ['anthropic', { stop_reason: 'refusal' }, 'refusal'],
    ['anthropic', { stop_reason: 'pause_turn' }, 'other'],
    ['openai', { finish_reason: 'length' }, 'max_tokens'],
    ['openai', { finish_reason: 'content_filter' }, 'refusal'],
    ['openai', { finish_reason: 'stop' }, 'end_turn'],
    ['gemini', { finishReason: 'MAX_TOKENS' }, 'max_tokens'],
    ['gemini', { finishReason: 'SAFETY' }, 'refusal'],
    ['gemini', { finishReason: 'MALFORMED_FUNCTION_CALL' }, 'other'],
  ] as const)('%s maps %j to stop reason %s', async (provider, wire, expected) => {
    fx.reply(() => {
      if (provider === 'anthropic') {
        return {
          status: 200,
          body: {
            id: 'msg_1',
            type: 'message',
            role: 'assistant',
            model: 'claude-x',
            content: [{ type: 'text', text: 'x' }],
            stop_sequence: null,
            usage: { input_tokens: 1, output_tokens: 1 },
            ...wire,
          },
        };
      }
      if (provider === 'openai') {
        return {
          status: 200,
          body: {
            id: 'c',
            object: 'chat.completion',
            created: 1,
            model: 'gpt-x',
            choices: [{ index: 0, message: { role: 'assistant', content: 'x', refusal: null }, ...wire }],
          },
        };
      }
      return {
        status: 200,
        body: { candidates: [{ content: { role: 'model', parts: [{ text: 'x' }] }, index: 0, ...wire }] },
      };
    });
    const baseURL = provider === 'openai' ? `${fx.url}/v1` : fx.url;
    const engine = createEngine({ id: 's', provider, model: 'm', apiKey: KEY, baseURL });
    const result = await engine.call({
      messages: [{ role: 'user', content: 'hi' }],
      maxTokens: 5,
      idempotencyKey: 'k',
    });
    expect(result.stopReason).toBe(expected);
    expect(result.text).toBe('x');
  });
});
