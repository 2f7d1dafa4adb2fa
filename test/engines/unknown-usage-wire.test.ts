import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../../src/engines/create-engine.ts';
import { NO_USAGE_ANSWER, noUsageServer } from '../support/no-usage-server.ts';
import { startWireFixtureServer, type WireFixtureServer } from '../support/wire-fixture-server.ts';

/*
 * An OpenAI-compatible server that sends no usage (no `usage` in its completion, no include_usage chunk in its
 * stream), replayed byte for byte by a raw node:http fixture, read by the real OpenAI SDK. Today's bug: 0 input
 * tokens and characters ÷ 4 output tokens, as if measured. Now: both counts unknown (null), flagged, and
 * breakwater's estimate kept apart.
 */

let server: WireFixtureServer;
beforeAll(async () => {
  server = await startWireFixtureServer({ nousage: noUsageServer });
});
afterAll(async () => {
  await server.close();
});

const engine = () =>
  createEngine({
    id: 'local',
    provider: 'openai-compatible',
    flavor: 'vllm',
    model: 'llama3.1',
    baseURL: server.url('nousage'),
  });
const PROMPT = 'What moved EURUSD overnight? Keep it short.';
const request = (key: string) => ({
  messages: [{ role: 'user' as const, content: PROMPT }],
  maxTokens: 64,
  idempotencyKey: key,
});

describe('an OpenAI-compatible server without usage', () => {
  it('a plain call: the answer, with unknown usage and the estimate apart', async () => {
    const result = await engine().call(request('plain-1'));
    expect(result.text).toBe(NO_USAGE_ANSWER);
    expect(result.usage).toEqual({
      inputTokens: null,
      outputTokens: null,
      source: 'unknown',
      estimated: {
        inputTokens: Math.ceil(PROMPT.length / 4),
        outputTokens: Math.ceil(NO_USAGE_ANSWER.length / 4),
      },
    });
  });

  it('a stream that asked for include_usage and got none: complete, usage unknown', async () => {
    const deltas: string[] = [];
    const result = await engine().stream!(request('stream-1'), { text: (d) => deltas.push(d) });
    // The request did ask for usage; the server ignored it.
    const body = JSON.parse(server.requests('nousage').at(-1)!.body) as { stream_options?: unknown };
    expect(body.stream_options).toEqual({ include_usage: true });
    expect(deltas.join('')).toBe(NO_USAGE_ANSWER);
    expect(result.stopReason).toBe('end_turn');
    expect(result.usage).toEqual({
      inputTokens: null,
      outputTokens: null,
      source: 'unknown',
      estimated: {
        inputTokens: Math.ceil(PROMPT.length / 4),
        outputTokens: Math.ceil(NO_USAGE_ANSWER.length / 4),
      },
    });
  });
});
