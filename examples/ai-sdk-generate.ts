/**
 * breakwater under the Vercel AI SDK: `generateText` and `streamText` with `model: bw('premium')` run through
 * breakwater's tokens, breakers, cooldowns and fallback chain. The primary answers 429; the AI SDK's result still
 * arrives (from the backup), and `providerMetadata.breakwater` says which endpoint answered and what was met.
 * A tool round-trips: the model asks for it, the AI SDK runs it, the model answers with its result. Run it:
 * `npx tsx examples/ai-sdk-generate.ts` (needs `ai` 6; no network, no API key: the provider emulator stands in).
 */
import { pathToFileURL } from 'node:url';
import { generateText, stepCountIs, streamText, tool } from 'ai';
import { z } from 'zod';
import { type BreakwaterMetadata, createBreakwater } from '../src/ai-sdk/index.ts';
import { startEmulator } from '../src/entries/emulator-entry.ts';
import { createSupervisor } from '../src/index.ts';

/** What the example saw: the text of each call and breakwater's metadata for it. */
export interface AiSdkExampleResult {
  /** Each step's metadata: the tool call's step, then the answer's. */
  readonly generated: { readonly text: string; readonly steps: readonly BreakwaterMetadata[] };
  readonly streamed: { readonly text: string; readonly breakwater: BreakwaterMetadata };
  readonly toolRuns: readonly string[];
}

/**
 * Runs the example, printing what each call returned through `print`.
 *
 * @example
 * ```ts
 * const { generated } = await main({ print: () => {} });
 * generated.steps[0]?.endpointId; // 'gpt'
 * ```
 */
export async function main(
  options: { print?: (line: string) => void; signal?: AbortSignal } = {},
): Promise<AiSdkExampleResult> {
  const print = options.print ?? ((line: string) => console.log(line));
  const emulator = await startEmulator({ profile: { seed: 12 } });
  // The primary is rate-limited: every call to it answers 429 with Retry-After 30 s.
  emulator.addFault({ kind: 'rate_limit', match: { flavor: 'anthropic' }, retryAfterMs: 30_000 });
  const supervisor = createSupervisor({
    endpoints: [
      {
        id: 'claude',
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        apiKey: 'sk-ant-example-aisdk-01',
        baseURL: emulator.baseURL('anthropic'),
      },
      {
        id: 'gpt',
        provider: 'openai',
        model: 'gpt-4o-mini',
        apiKey: 'sk-example-aisdk-02',
        baseURL: emulator.baseURL('openai'),
      },
    ],
    chains: { premium: ['claude', 'gpt'] },
  });
  // Calls from the AI SDK take analysis-tier tokens (the config's default tiers: analysis before ops).
  const bw = createBreakwater(supervisor, { tier: 'analysis' });
  const toolRuns: string[] = [];
  const signal = options.signal;
  try {
    // generateText with a tool: the AI SDK runs `execute`, breakwater carries both model calls.
    const generated = await generateText({
      model: bw('premium'),
      prompt: 'Where does EUR/USD trade right now?',
      tools: {
        fx_rate: tool({
          description: 'Latest rate of a currency pair',
          inputSchema: z.object({ pair: z.enum(['EURUSD', 'USDJPY']) }),
          execute: async ({ pair }) => {
            toolRuns.push(pair);
            return pair === 'EURUSD' ? 1.0842 : 151.37;
          },
        }),
      },
      stopWhen: stepCountIs(3),
      ...(signal ? { abortSignal: signal } : {}),
    });
    // One model call per step; each says which endpoint answered it and what it met on the way.
    const steps = generated.steps.map((step) => step.providerMetadata?.breakwater as BreakwaterMetadata);
    for (const [i, m] of steps.entries()) {
      const faults = m.faults.map((f) => `${f.kind} on ${f.endpointId}`).join(', ') || 'none';
      print(`generateText step ${i + 1}: ${m.outcome} via ${m.endpointId}; faults: ${faults}`);
    }
    print(`  ${generated.text}`);

    // streamText: the finished answer arrives as stream parts (token-by-token streaming is not there yet).
    const stream = streamText({
      model: bw('premium'),
      prompt: 'Summarize the overnight FX moves.',
      ...(signal ? { abortSignal: signal } : {}),
    });
    let text = '';
    for await (const delta of stream.textStream) text += delta;
    const s = (await stream.providerMetadata)?.breakwater as BreakwaterMetadata;
    print(`streamText: ${s.outcome} via ${s.endpointId}`);
    print(`  ${text}`);
    return {
      generated: { text: generated.text, steps },
      streamed: { text, breakwater: s },
      toolRuns,
    };
  } finally {
    await supervisor.stop();
    await emulator.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
