import type { LanguageModelV3Prompt } from '@ai-sdk/provider';
import { generateText, stepCountIs, streamText, tool, wrapLanguageModel } from 'ai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createBreakwater } from '../../src/ai-sdk/index.ts';
import type { BreakwaterMetadata } from '../../src/ai-sdk/breakwater-metadata.ts';
import { mapPrompt } from '../../src/ai-sdk/prompt-mapping.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import { type EmulatorFixture, startEmulatorFixture } from '../../src/testing/emulator-fixture.ts';
import { waitFor } from '../support/wait-for.ts';

/*
 * The AI SDK provider with the real `ai` package (6.x): generateText and streamText go through breakwater's
 * tokens, breakers and fallback, over the real SDKs and real HTTP to the emulator.
 */

let fixture: EmulatorFixture;
let supervisor: Supervisor;

beforeAll(async () => {
  fixture = await startEmulatorFixture({ profile: { seed: 3 } });
});
afterEach(async () => {
  await supervisor?.stop();
  fixture.reset();
});
afterAll(async () => {
  await fixture.close();
});

function start() {
  supervisor = createSupervisor({
    endpoints: [fixture.endpoint('primary', 'anthropic'), fixture.endpoint('backup', 'openai')],
    chains: { premium: ['primary', 'backup'] },
  });
  return createBreakwater(supervisor);
}

const meta = (m: unknown) => (m as { breakwater: BreakwaterMetadata & { withdrawn?: boolean } }).breakwater;

describe('breakwater/ai-sdk', () => {
  it('generateText answers on the primary; the metadata names the endpoint', async () => {
    const bw = start();
    const result = await generateText({ model: bw('premium'), prompt: 'What moved EURUSD overnight?' });
    expect(result.text).toContain('claude-sonnet-4-6');
    expect(result.finishReason).toBe('stop');
    expect(result.usage.inputTokens).toBeGreaterThan(0);
    const m = meta(result.providerMetadata);
    expect(m.outcome).toBe('answered');
    expect(m.endpointId).toBe('primary');
    expect(m.faults).toEqual([]);
  });

  it('generateText with a primary answering 429 ends on the backup, the 429 in the metadata', async () => {
    fixture.emulator.addFault({ kind: 'rate_limit', match: { flavor: 'anthropic' }, retryAfterMs: 30_000 });
    const bw = start();
    const result = await generateText({ model: bw('premium'), prompt: 'Summarize the night.' });
    expect(result.text).toContain('gpt-4o-mini');
    const m = meta(result.providerMetadata);
    expect(m.outcome).toBe('fallback');
    expect(m.endpointId).toBe('backup');
    expect(m.faults.map((f) => [f.kind, f.endpointId, f.status])).toContainEqual([
      'rate_limited',
      'primary',
      429,
    ]);
  });

  it('streamText with a primary answering 429 streams the backup answer', async () => {
    fixture.emulator.addFault({ kind: 'rate_limit', match: { flavor: 'anthropic' }, retryAfterMs: 30_000 });
    const bw = start();
    const result = streamText({ model: bw('premium'), prompt: 'Summarize the night.' });
    let text = '';
    for await (const delta of result.textStream) text += delta;
    expect(text).toContain('gpt-4o-mini');
    expect(await result.finishReason).toBe('stop');
    const m = meta(await result.providerMetadata);
    expect(m.outcome).toBe('fallback');
    expect(m.endpointId).toBe('backup');
    expect(m.faults.map((f) => f.kind)).toContain('rate_limited');
  });

  it('a tool call round-trips: the model asks, the AI SDK runs the tool, the model answers with its result', async () => {
    const bw = start();
    const runs: unknown[] = [];
    const result = await generateText({
      model: bw('premium'),
      prompt: 'What is EURUSD?',
      tools: {
        fx_rate: tool({
          description: 'Latest rate of a currency pair',
          inputSchema: z.object({ pair: z.enum(['EURUSD', 'USDJPY']) }),
          execute: async ({ pair }) => {
            runs.push(pair);
            return { pair, rate: 1.0842 };
          },
        }),
      },
      stopWhen: stepCountIs(3),
    });
    expect(runs).toEqual(['EURUSD']);
    expect(result.steps).toHaveLength(2);
    expect(result.steps[0]!.finishReason).toBe('tool-calls');
    expect(result.steps[0]!.toolCalls.map((c) => [c.toolName, c.input])).toEqual([
      ['fx_rate', { pair: 'EURUSD' }],
    ]);
    // The emulator's model quotes the tool result it was sent: the result went upstream in the second call.
    expect(result.text).toContain('fx_rate');
    expect(result.text).toContain('1.0842');
  });

  it('an abort cancels the upstream call: generateText rejects and the emulator sees the request end', async () => {
    fixture.emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'anthropic' } });
    // The header deadline (10 min) is far past waitFor's bound (20 s): only the abort can end the hanging request.
    supervisor = createSupervisor({
      endpoints: [
        fixture.endpoint('primary', 'anthropic', { headersTimeoutMs: 600_000 }),
        fixture.endpoint('backup', 'openai'),
      ],
      chains: { premium: ['primary', 'backup'] },
    });
    const bw = createBreakwater(supervisor);
    const controller = new AbortController();
    const pending = generateText({
      model: bw('premium'),
      prompt: 'This one hangs.',
      abortSignal: controller.signal,
      maxRetries: 0,
    });
    const settled = pending.then(
      () => 'resolved',
      (e: unknown) => e,
    );
    await waitFor(() => fixture.emulator.stats().inFlight === 1, 'the emulator to hold the call');
    controller.abort(new Error('user went away'));
    const outcome = await settled;
    expect(outcome).toBeInstanceOf(Error);
    expect((outcome as Error).message).toContain('user went away');
    await waitFor(() => fixture.emulator.stats().inFlight === 0, 'the upstream request to end');
    await waitFor(() => supervisor.tokens().held === 0, 'the token to come back');
    expect(fixture.emulator.stats().calls.filter((c) => c.flavor === 'openai')).toHaveLength(0);
  });

  it('streamText streams delta by delta through supervisor.stream, the text equal to generateText', async () => {
    const bw = start();
    const result = streamText({ model: bw('premium'), prompt: 'Stream the overnight summary.' });
    const deltas: string[] = [];
    for await (const delta of result.textStream) deltas.push(delta);
    expect(deltas.length).toBeGreaterThan(1);
    const whole = await generateText({ model: bw('premium'), prompt: 'Stream the overnight summary.' });
    expect(deltas.join('')).toBe(whole.text);
    expect(meta(await result.providerMetadata).outcome).toBe('answered');
  });

  it('streamText survives a stream cut after its first chunk: continued on an Anthropic endpoint, nothing doubled', async () => {
    supervisor = createSupervisor({
      endpoints: [
        fixture.endpoint('primary', 'anthropic', { apiKey: 'sk-test-cut-primary-0000' }),
        fixture.endpoint('backup', 'anthropic'),
      ],
      chains: { premium: ['primary', 'backup'] },
    });
    const bw = createBreakwater(supervisor);
    const clean = await generateText({ model: bw('premium'), prompt: 'Stream, then break.' });
    fixture.emulator.addFault({
      kind: 'stream_cut',
      match: { key: 'sk-test-cut-primary-0000' },
      count: 1,
      afterChunks: 1,
    });
    const result = streamText({ model: bw('premium'), prompt: 'Stream, then break.' });
    let text = '';
    for await (const delta of result.textStream) text += delta;
    const m = meta(await result.providerMetadata);
    expect(m.faults.map((f) => f.kind)).toEqual(['network']);
    expect(m.attempts).toBe(2);
    // The emulator continues a prefill with the rest of the same answer: the stream reads as the unbroken one.
    expect(text).toBe(clean.text);
    expect(await result.text).toBe(clean.text);
  });

  it('breaking out of streamText aborts the upstream stream and frees the token', async () => {
    fixture.emulator.addFault({ kind: 'stream_stall', match: { flavor: 'anthropic' }, afterChunks: 1 });
    // The idle deadline (10 min) is far past waitFor's bound (20 s): only the abort can close the stalled request.
    supervisor = createSupervisor({
      endpoints: [
        fixture.endpoint('primary', 'anthropic', { idleTimeoutMs: 600_000 }),
        fixture.endpoint('backup', 'openai'),
      ],
      chains: { premium: ['primary', 'backup'] },
    });
    const bw = createBreakwater(supervisor);
    const controller = new AbortController();
    const result = streamText({
      model: bw('premium'),
      prompt: 'Stall after a word.',
      abortSignal: controller.signal,
    });
    for await (const delta of result.textStream) {
      expect(delta.length).toBeGreaterThan(0);
      controller.abort(new Error('reader left'));
      break;
    }
    await waitFor(() => fixture.emulator.stats().inFlight === 0, 'the upstream stream to end');
    await waitFor(() => supervisor.tokens().held === 0, 'the token to come back');
  });

  it('streamText after a restart (OpenAI cannot continue a prefix): the withdrawn text part is marked, the answer follows', async () => {
    supervisor = createSupervisor({
      endpoints: [
        fixture.endpoint('primary', 'openai', { apiKey: 'sk-test-restart-primary-00' }),
        fixture.endpoint('backup', 'openai'),
      ],
      chains: { premium: ['primary', 'backup'] },
    });
    fixture.emulator.addFault({
      kind: 'stream_cut',
      match: { key: 'sk-test-restart-primary-00' },
      count: 1,
      afterChunks: 1,
    });
    const bw = createBreakwater(supervisor);
    const result = streamText({ model: bw('premium'), prompt: 'Restart me.' });
    const ends: unknown[] = [];
    const texts = new Map<string, string>();
    for await (const part of result.fullStream) {
      if (part.type === 'text-delta') texts.set(part.id, (texts.get(part.id) ?? '') + part.text);
      if (part.type === 'text-end') ends.push(part.providerMetadata);
    }
    expect(ends).toHaveLength(2);
    expect(ends[0]).toMatchObject({ breakwater: { withdrawn: true } });
    expect(ends[1]).toBeUndefined();
    const [withdrawn, answer] = [...texts.values()];
    expect(withdrawn!.length).toBeGreaterThan(0);
    const clean = await generateText({ model: bw('premium'), prompt: 'Restart me.' });
    expect(answer).toBe(clean.text);
    const m = meta(await result.providerMetadata);
    expect(m.faults.map((f) => f.kind)).toEqual(['network']);
    // The answer alone: the metadata's text, and the text parts not marked withdrawn.
    expect(m.text).toBe(clean.text);
    expect(answerOf(await result.content)).toBe(clean.text);
  });

  it('a conversation resent after a restart never sends the withdrawn text upstream again', async () => {
    supervisor = createSupervisor({
      endpoints: [
        fixture.endpoint('primary', 'openai', { apiKey: 'sk-test-restart-primary-00' }),
        fixture.endpoint('backup', 'openai'),
      ],
      chains: { premium: ['primary', 'backup'] },
    });
    fixture.emulator.addFault({
      kind: 'stream_cut',
      match: { key: 'sk-test-restart-primary-00' },
      count: 1,
      afterChunks: 2,
    });
    const bw = createBreakwater(supervisor);
    const first = streamText({ model: bw('premium'), prompt: 'Restart me.' });
    const answer = meta(await first.providerMetadata).text;
    const withdrawn = (await first.content).find(
      (p) => p.type === 'text' && meta(p.providerMetadata ?? { breakwater: {} }).withdrawn === true,
    );
    expect(withdrawn).toBeDefined();
    // The next call carries the first one's response messages (withdrawn part included, as the AI SDK keeps it).
    let sent: LanguageModelV3Prompt | undefined;
    const model = wrapLanguageModel({
      model: bw('premium'),
      middleware: {
        specificationVersion: 'v3',
        transformParams: async ({ params }) => {
          sent = params.prompt;
          return params;
        },
      },
    });
    await generateText({
      model,
      messages: [
        { role: 'user', content: 'Restart me.' },
        ...(await first.response).messages,
        { role: 'user', content: 'Go on.' },
      ],
    });
    const assistant = mapPrompt(sent!).messages.filter((m) => m.role === 'assistant');
    expect(assistant).toEqual([{ role: 'assistant', content: answer }]);
  });

  it('a turn ending degraded after partial text: the partial part is withdrawn, the degraded answer stands alone', async () => {
    supervisor = createSupervisor({
      endpoints: [fixture.endpoint('primary', 'openai', { apiKey: 'sk-test-degrade-primary-0' })],
      chains: { premium: ['primary'] },
    });
    fixture.emulator.addFault({
      kind: 'stream_cut',
      match: { key: 'sk-test-degrade-primary-0' },
      afterChunks: 1,
    });
    const bw = createBreakwater(supervisor, { maxAttempts: 1 });
    const result = streamText({ model: bw('premium'), prompt: 'Degrade after a word.' });
    const parts = new Map<string, { text: string; withdrawn: boolean }>();
    for await (const part of result.fullStream) {
      if (part.type === 'text-start') parts.set(part.id, { text: '', withdrawn: false });
      if (part.type === 'text-delta') parts.get(part.id)!.text += part.text;
      if (part.type === 'text-end')
        parts.get(part.id)!.withdrawn = meta(part.providerMetadata ?? { breakwater: {} }).withdrawn === true;
    }
    const m = meta(await result.providerMetadata);
    expect(m.degraded).toBe(true);
    const [partial, degraded] = [...parts.values()];
    expect(partial!.text.length).toBeGreaterThan(0);
    expect(partial!.withdrawn).toBe(true);
    expect(degraded).toEqual({ text: m.text, withdrawn: false });
    expect(answerOf(await result.content)).toBe(m.text);
  });
});

/** The text parts of a step not marked withdrawn: the turn's answer. */
function answerOf(content: readonly { type: string; text?: string; providerMetadata?: unknown }[]): string {
  return content
    .filter((p) => p.type === 'text' && meta(p.providerMetadata ?? { breakwater: {} }).withdrawn !== true)
    .map((p) => p.text)
    .join('');
}
