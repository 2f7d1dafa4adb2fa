import { generateText, stepCountIs, streamText, tool } from 'ai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createBreakwater } from '../../src/ai-sdk/index.ts';
import type { BreakwaterMetadata } from '../../src/ai-sdk/breakwater-language-model.ts';
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

const meta = (m: unknown) => (m as { breakwater: BreakwaterMetadata }).breakwater;

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
    const bw = start();
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
});
