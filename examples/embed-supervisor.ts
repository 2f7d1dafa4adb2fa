/**
 * Embedding breakwater in your own program: a supervisor with two endpoints and a chain, one agent with a tool
 * and a decision tree, a question answered through the tool, then the same question while the primary answers
 * 429 — and the agent simply finishes on the fallback. Run it: `npx tsx examples/embed-supervisor.ts` (no network, no API key: the provider emulator stands in).
 */
import { pathToFileURL } from 'node:url';
import { startEmulator } from '../src/entries/emulator-entry.ts';
import { createSupervisor, defineAgent, type Turn } from '../src/index.ts';

/** What the example saw: both turns, and every time the tool actually ran (with the model's arguments). */
export interface EmbedResult {
  readonly turns: readonly Turn[];
  readonly toolRuns: readonly Readonly<Record<string, unknown>>[];
}

const RATES: Readonly<Record<string, number>> = { EURUSD: 1.0842, USDJPY: 151.37 }; // a market-data service, really

/**
 * Runs the example, printing each turn through `print`.
 *
 * @example
 * ```ts
 * const { turns } = await main({ print: () => {} });
 * turns[1]?.outcome; // 'fallback'
 * ```
 */
export async function main(
  options: { print?: (line: string) => void; signal?: AbortSignal } = {},
): Promise<EmbedResult> {
  const print = options.print ?? ((line: string) => console.log(line));
  const toolRuns: Record<string, unknown>[] = [];

  // 1. The provider emulator: real Anthropic/OpenAI wire formats on 127.0.0.1. Its "model" calls the first
  //    tool it is offered, then quotes the tool's result. In production you drop this and the baseURLs.
  const emulator = await startEmulator({ profile: { seed: 7 } });

  // 2. The runtime. Endpoints are provider + key + model; a chain lists them in order of preference.
  //    Keys would normally come from `apiKeyEnv`; these are dummies the emulator accepts.
  const supervisor = createSupervisor({
    endpoints: [
      {
        id: 'claude',
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        apiKey: 'sk-ant-example-embed-0001',
        baseURL: emulator.baseURL('anthropic'),
      },
      {
        id: 'gpt',
        provider: 'openai',
        model: 'gpt-4o-mini',
        apiKey: 'sk-example-embed-0000000002',
        baseURL: emulator.baseURL('openai'),
      },
    ],
    chains: { premium: ['claude', 'gpt'] },
  });

  try {
    // 3. An agent: who it is, which chain it calls (and its priority tier), the tools its model may use.
    const fxDesk = defineAgent({
      name: 'fx-desk',
      role: 'You are an FX desk assistant. Quote rates from the fx_rate tool only.',
      tier: 'analysis',
      chain: 'premium',
      tools: {
        fx_rate: {
          description: 'Spot rate of a currency pair',
          parameters: {
            type: 'object',
            properties: { pair: { type: 'string', enum: ['EURUSD', 'USDJPY'] } },
            required: ['pair'],
          },
          run: async (args) => {
            toolRuns.push(args);
            return RATES[String(args.pair)] ?? Number.NaN;
          },
        },
      },
      // Asked only when no engine can answer in time: a structured reply, labelled degraded, never a placeholder.
      decisionTree: (c) => ({
        summary: `No live rate: ${c.reason}`,
        source: 'decision_tree',
        reason: c.reason,
      }),
    });
    const agent = supervisor.spawnAgent(fxDesk);

    // 4. Ask. `ask` never rejects for an upstream fault: the turn says how it ended and what it met.
    const first = await agent.ask('Where does EUR/USD trade right now?', { signal: options.signal });
    printTurn(print, 1, first);

    // 5. Break the primary: its next call answers 429 with Retry-After 30 s. breakwater cools that endpoint
    //    (only that one: provider + key + model) and the agent moves to the next endpoint of its chain.
    emulator.addFault({ kind: 'rate_limit', match: { flavor: 'anthropic' }, retryAfterMs: 30_000, count: 1 });
    const second = await agent.ask('And EUR/USD again, please?', { signal: options.signal });
    printTurn(print, 2, second);

    return { turns: [first, second], toolRuns };
  } finally {
    // 6. Drain and stop: turns in progress finish, then every actor stops; then the emulator closes.
    await supervisor.stop();
    await emulator.close();
  }
}

/** One turn, the way a log or a chat transcript would show it. */
function printTurn(print: (line: string) => void, n: number, t: Turn): void {
  print(`turn ${n}: ${t.outcome} via ${t.endpointId} (${t.model}), ${t.attempts} upstream calls`);
  for (const f of t.faults) print(`  fault: ${f.kind} (HTTP ${f.status}) on ${f.endpointId}`);
  for (const m of t.messages) {
    if (m.role === 'tool_call') print(`  tool call: ${m.call.name}(${JSON.stringify(m.call.arguments)})`);
    if (m.role === 'tool_result') print(`  tool result: ${m.content}`);
  }
  print(`  answer: ${t.answer.text}`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
