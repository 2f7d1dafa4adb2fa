/**
 * The emulator and the engine adapter in one short program: start the emulator, make a 429 happen,
 * read the classified fault, honour its retry-after, and call again successfully.
 *
 * Run it: `npx tsx examples/emulator-and-adapter.ts` (no network, no API key).
 */
import { pathToFileURL } from 'node:url';
import { sleep, systemClock } from '../src/clock/clock.ts';
import { startEmulator } from '../src/emulator/emulator-server.ts';
import { createEngine } from '../src/engines/create-engine.ts';
import type { EngineResult } from '../src/core/engine-types.ts';
import { type Fault, isEngineFaultError } from '../src/core/fault.ts';

/** What the example saw. */
export interface ExampleOutcome {
  /** The 429, as the adapter classified it. */
  readonly fault: Fault;
  /** The answer of the call made after the retry-after. */
  readonly result: EngineResult;
  /** Calls the emulator served, by HTTP status. */
  readonly byStatus: Readonly<Record<string, number>>;
}

/**
 * Runs the example, printing each step through `print`.
 *
 * @example
 * ```ts
 * const { fault, result } = await main({ print: () => {} });
 * fault.kind; // 'rate_limited'
 * ```
 */
export async function main(
  options: { print?: (line: string) => void; signal?: AbortSignal } = {},
): Promise<ExampleOutcome> {
  const print = options.print ?? ((line: string) => console.log(line));
  // 1. The emulator: one listener per provider wire format, on 127.0.0.1, ephemeral ports.
  const emulator = await startEmulator({ profile: { seed: 7 } });
  try {
    // 2. One engine: the real Anthropic SDK, pointed at the emulator. The key is a dummy.
    const engine = createEngine({
      id: 'claude-primary',
      provider: 'anthropic',
      model: 'claude-sonnet-4-6',
      apiKey: 'sk-ant-example-key-0000000000',
      baseURL: emulator.baseURL('anthropic'),
    });

    // 3. A fault rule: the next Anthropic call answers 429 with retry-after 300 ms.
    emulator.addFault({ kind: 'rate_limit', match: { flavor: 'anthropic' }, count: 1, retryAfterMs: 300 });

    const request = {
      messages: [{ role: 'user' as const, content: 'Give me the status of the night batch.' }],
      maxTokens: 128,
      idempotencyKey: 'example/call-1',
      ...(options.signal ? { signal: options.signal } : {}),
    };

    // 4. The call fails, and the adapter rejects with a classified fault (never a raw SDK error).
    let fault: Fault | undefined;
    try {
      await engine.call(request);
    } catch (e) {
      if (!isEngineFaultError(e)) throw e;
      fault = e.fault;
    }
    if (!fault) throw new Error('expected the emulator to answer 429');
    print(
      `fault: ${fault.kind} (HTTP ${fault.status}), retry after ${fault.retryAfterMs} ms, code ${fault.code}`,
    );

    // 5. Honour the retry-after, then the same logical call (same idempotency key) succeeds.
    await sleep(systemClock, fault.retryAfterMs ?? 0, options.signal);
    const result = await engine.call(request);
    print(`answer from ${result.endpoint.id} (${result.model}): ${result.text.slice(0, 60)}…`);
    print(`usage: ${result.usage.inputTokens} input + ${result.usage.outputTokens} output tokens`);
    print(
      `requests left this minute: ${result.rateLimit.requests?.remaining} of ${result.rateLimit.requests?.limit}`,
    );

    const byStatus = emulator.stats().byStatus;
    print(`emulator saw: ${JSON.stringify(byStatus)}`);
    return { fault, result, byStatus };
  } finally {
    await emulator.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  await main();
}
