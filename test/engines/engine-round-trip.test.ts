import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createEngine } from '../../src/engines/create-engine.ts';
import { keyFingerprint } from '../../src/engines/endpoint-config.ts';
import type { ChatMessage, Engine, EngineResult } from '../../src/core/engine-types.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { KEY, TARGETS, weatherTool } from './emulator-targets.ts';

// The same tool-use round trip through every provider kind, with the real SDKs over real HTTP
// against the provider emulator: the normalized transcripts must be identical.

/** What must not differ between providers: roles, tool names, parsed args, stop reasons. */
function project(transcript: readonly ChatMessage[], results: readonly EngineResult[]) {
  return {
    transcript: transcript.map((m) => {
      switch (m.role) {
        case 'tool_call':
          return { role: m.role, name: m.call.name, args: m.call.arguments };
        case 'tool_result':
          return { role: m.role, name: m.toolName, content: m.content };
        default:
          return { role: m.role };
      }
    }),
    stops: results.map((r) => r.stopReason),
    toolCallsPerTurn: results.map((r) => r.toolCalls.length),
  };
}

/** tools offered → tool call → tool result → final answer, the way an agent loop drives it. */
async function roundTrip(engine: Engine, tag: string) {
  const transcript: ChatMessage[] = [{ role: 'user', content: 'What is the weather in Paris this week?' }];
  const results: EngineResult[] = [];
  const first = await engine.call({
    system: 'You answer with the tool.',
    messages: transcript,
    tools: [weatherTool],
    maxTokens: 400,
    idempotencyKey: `${tag}/turn-1`,
  });
  results.push(first);
  if (first.text) transcript.push({ role: 'assistant', content: first.text });
  for (const call of first.toolCalls) transcript.push({ role: 'tool_call', call });
  for (const call of first.toolCalls) {
    transcript.push({
      role: 'tool_result',
      toolCallId: call.id,
      toolName: call.name,
      content: 'sunny, 21 degrees',
    });
  }
  const final = await engine.call({
    system: 'You answer with the tool.',
    messages: transcript,
    tools: [weatherTool],
    maxTokens: 400,
    idempotencyKey: `${tag}/turn-2`,
  });
  results.push(final);
  transcript.push({ role: 'assistant', content: final.text });
  return { transcript, results };
}

describe('tool-use round trip on every provider kind (emulator, real SDKs)', () => {
  let emulator: Emulator;
  const runs = new Map<string, { transcript: ChatMessage[]; results: EngineResult[]; engine: Engine }>();

  beforeAll(async () => {
    emulator = await startEmulator({ profile: { seed: 7, answerTokens: 20 } });
    for (const t of TARGETS) {
      const engine = createEngine(t.config(emulator.baseURL(t.flavor)));
      runs.set(t.name, { ...(await roundTrip(engine, t.name)), engine });
    }
  });
  afterAll(() => emulator?.close());

  it('gives identical normalized transcripts on all four provider kinds (and every compatible flavor)', () => {
    const reference = project(runs.get('anthropic')!.transcript, runs.get('anthropic')!.results);
    expect(reference).toEqual({
      transcript: [
        { role: 'user' },
        { role: 'tool_call', name: 'get_weather', args: { location: 'sample', unit: 'celsius', days: 1 } },
        { role: 'tool_result', name: 'get_weather', content: 'sunny, 21 degrees' },
        { role: 'assistant' },
      ],
      stops: ['tool_use', 'end_turn'],
      toolCallsPerTurn: [1, 0],
    });
    for (const t of TARGETS) {
      const run = runs.get(t.name)!;
      expect({ target: t.name, ...project(run.transcript, run.results) }).toEqual({
        target: t.name,
        ...reference,
      });
      // The final answer really saw the tool result that went back on this provider's wire format.
      expect(run.results[1]!.text).toContain('sunny, 21 degrees');
    }
  });

  it('gives every tool call an id, and Gemini the stable name-index one', () => {
    for (const t of TARGETS) {
      const call = runs.get(t.name)!.results[0]!.toolCalls[0]!;
      expect(call.id.length).toBeGreaterThan(0);
    }
    expect(runs.get('gemini')!.results[0]!.toolCalls[0]!.id).toBe('get_weather-0');
  });

  it('fills usage, model, latency and the endpoint descriptor from the real responses', () => {
    for (const t of TARGETS) {
      const { results, engine } = runs.get(t.name)!;
      for (const r of results) {
        expect(r.usage.inputTokens, t.name).toBeGreaterThan(0);
        expect(r.usage.outputTokens, t.name).toBeGreaterThan(0);
        expect(r.model, t.name).toBeTruthy();
        expect(r.latencyMs, t.name).toBeGreaterThanOrEqual(0);
        expect(r.endpoint).toBe(engine.endpoint);
        expect(JSON.stringify(r)).not.toContain(KEY);
      }
      // The second call carries the whole first exchange, so it is longer.
      expect(results[1]!.usage.inputTokens).toBeGreaterThan(results[0]!.usage.inputTokens!);
      const expected = t.config(emulator.baseURL(t.flavor));
      expect(engine.endpoint).toMatchObject({
        id: expected.id,
        provider: expected.provider,
        model: expected.model,
        keyFingerprint: expected.apiKey ? keyFingerprint(KEY) : 'none',
      });
      expect(Object.isFrozen(engine.endpoint)).toBe(true);
    }
  });

  it('reads the request id and the rate-limit state from the response headers', () => {
    for (const name of ['anthropic', 'openai']) {
      const r = runs.get(name)!.results[0]!;
      expect(r.requestId, name).toBeTruthy();
      expect(r.rateLimit.requests?.limit, name).toBeGreaterThan(0);
      expect(r.rateLimit.requests?.remaining, name).toBeGreaterThanOrEqual(0);
      expect(r.rateLimit.requests?.resetAt, name).toBeGreaterThan(0);
    }
    expect(runs.get('anthropic')!.results[0]!.requestId).toMatch(/^req_/);
  });

  it('sends each call’s idempotency key as the Idempotency-Key header, once per call', () => {
    const calls = emulator.stats().calls;
    for (const t of TARGETS) {
      for (const turn of ['turn-1', 'turn-2']) {
        const key = `${t.name}/${turn}`;
        const seen = calls.filter((c) => c.idempotencyKey === key);
        expect(seen, key).toHaveLength(1);
        expect(seen[0]!.flavor).toBe(t.flavor);
        expect(seen[0]!.status).toBe(200);
      }
    }
  });
});
