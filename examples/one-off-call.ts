/**
 * A one-off call under breakwater's protection: no agent, no memory, one request — what `generateText` users write
 * every day, with tokens, breakers, fallback and the degraded layer around it. A typed tool (`defineTool` with a
 * zod schema) runs inside the call. The primary answers 429, so the call ends on the backup. Run it:
 * `npx tsx examples/one-off-call.ts` (no network, no API key: the provider emulator stands in).
 */
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import { startEmulator } from '../src/entries/emulator-entry.ts';
import { createSupervisor, defineTool, type Turn } from '../src/index.ts';

/**
 * Runs the example, printing the call's outcome through `print`.
 *
 * @example
 * ```ts
 * const turn = await main({ print: () => {} });
 * turn.outcome; // 'fallback'
 * ```
 */
export async function main(options: { print?: (line: string) => void; signal?: AbortSignal } = {}): Promise<{
  turn: Turn;
  quoted: readonly string[];
}> {
  const print = options.print ?? ((line: string) => console.log(line));
  const emulator = await startEmulator({ profile: { seed: 9 } });
  // The primary is rate-limited for the next 30 s: its first answer is a 429 with Retry-After.
  emulator.addFault({ kind: 'rate_limit', match: { flavor: 'anthropic' }, retryAfterMs: 30_000, count: 1 });
  const supervisor = createSupervisor({
    endpoints: [
      {
        id: 'claude',
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        apiKey: 'sk-ant-example-call-0001',
        baseURL: emulator.baseURL('anthropic'),
      },
      {
        id: 'gpt',
        provider: 'openai',
        model: 'gpt-4o-mini',
        apiKey: 'sk-example-call-0002',
        baseURL: emulator.baseURL('openai'),
      },
    ],
    chains: { premium: ['claude', 'gpt'] },
  });
  const quoted: string[] = [];
  // The schema types `run`'s arguments ({ pair: 'EURUSD' | 'USDJPY' }) and is what the model sees as JSON Schema.
  const fxRate = defineTool({
    description: 'Latest rate of a currency pair',
    parameters: z.object({ pair: z.enum(['EURUSD', 'USDJPY']) }),
    run: async ({ pair }) => {
      quoted.push(pair);
      return pair === 'EURUSD' ? '1.0842' : '151.37';
    },
  });
  try {
    const turn = await supervisor.call({
      chain: 'premium',
      system: 'You are an FX desk assistant. Quote rates from the fx_rate tool only.',
      messages: [{ role: 'user', content: 'Where does EUR/USD trade right now?' }],
      tools: { fx_rate: fxRate },
      ...(options.signal ? { signal: options.signal } : {}),
    });
    print(`${turn.outcome} via ${turn.endpointId} (${turn.model}), ${turn.attempts} upstream calls`);
    for (const f of turn.faults) print(`  fault: ${f.kind} (HTTP ${f.status}) on ${f.endpointId}`);
    print(`  answer: ${turn.answer.text}`);
    return { turn, quoted };
  } finally {
    await supervisor.stop();
    await emulator.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
