import { generateText, streamText } from 'ai';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createBreakwater } from '../../src/ai-sdk/index.ts';
import type { BreakwaterMetadata } from '../../src/ai-sdk/breakwater-metadata.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import { NO_USAGE_ANSWER, noUsageServer } from '../support/no-usage-server.ts';
import { startWireFixtureServer, type WireFixtureServer } from '../support/wire-fixture-server.ts';

/*
 * The AI SDK's `usage` when the provider reported none (an OpenAI-compatible server without usage, replayed by a
 * raw node:http fixture; the real `ai` package and OpenAI SDK). The V3 spec's counts are `number | undefined`:
 * unknown is `undefined`, never 0 or an estimate; breakwater's estimate is in `providerMetadata.breakwater.usage`.
 */

let server: WireFixtureServer;
let supervisor: Supervisor | undefined;
beforeAll(async () => {
  server = await startWireFixtureServer({ nousage: noUsageServer });
});
afterEach(async () => {
  await supervisor?.stop();
  supervisor = undefined;
});
afterAll(async () => {
  await server.close();
});

function start() {
  supervisor = createSupervisor({
    endpoints: [
      {
        id: 'local',
        provider: 'openai-compatible',
        flavor: 'vllm',
        model: 'llama3.1',
        baseURL: server.url('nousage'),
      },
    ],
    chains: { local: ['local'] },
  });
  return createBreakwater(supervisor);
}

const usageMeta = (m: unknown) => (m as { breakwater: BreakwaterMetadata }).breakwater.usage;

describe('breakwater/ai-sdk with a provider that reports no usage', () => {
  it('generateText: usage counts undefined, the estimate labelled in the metadata', async () => {
    const result = await generateText({ model: start()('local'), prompt: 'What moved EURUSD overnight?' });
    expect(result.text).toBe(NO_USAGE_ANSWER);
    expect(result.usage.inputTokens).toBeUndefined();
    expect(result.usage.outputTokens).toBeUndefined();
    const meta = usageMeta(result.providerMetadata);
    expect(meta.source).toBe('unknown');
    expect(meta.estimatedOutputTokens).toBe(Math.ceil(NO_USAGE_ANSWER.length / 4));
    expect(meta.estimatedInputTokens).toBeGreaterThan(0);
  });

  it('streamText: the finish part carries undefined counts and the labelled estimate', async () => {
    const result = streamText({ model: start()('local'), prompt: 'And today?' });
    expect(await result.text).toBe(NO_USAGE_ANSWER);
    const usage = await result.usage;
    expect(usage.inputTokens).toBeUndefined();
    expect(usage.outputTokens).toBeUndefined();
    const meta = usageMeta(await result.providerMetadata);
    expect(meta).toEqual({
      source: 'unknown',
      estimatedInputTokens: meta.estimatedInputTokens,
      estimatedOutputTokens: Math.ceil(NO_USAGE_ANSWER.length / 4),
    });
    expect(meta.estimatedInputTokens).toBeGreaterThan(0);
  });
});
