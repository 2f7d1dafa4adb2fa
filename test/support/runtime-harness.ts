import type { ManualClock } from '../../src/clock/clock.ts';
import type { ParsedEndpointConfig } from '../../src/engines/endpoint-config.ts';
import type { Emulator, EmulatorFlavor } from '../../src/emulator/index.ts';

/** An endpoint config pointing at one flavor of a running emulator. */
export function emulatorEndpoint(
  emulator: Emulator,
  id: string,
  flavor: EmulatorFlavor,
  model: string,
  apiKey = `sk-test-${id}-000000000000`,
  extra: Partial<ParsedEndpointConfig> = {},
): ParsedEndpointConfig {
  const provider =
    flavor === 'anthropic'
      ? 'anthropic'
      : flavor === 'openai'
        ? 'openai'
        : flavor === 'gemini'
          ? 'gemini'
          : 'openai-compatible';
  return {
    id,
    provider,
    ...(provider === 'openai-compatible' ? { flavor: flavor as 'vllm' | 'ollama' | 'gemini-compat' } : {}),
    model,
    apiKey,
    baseURL: emulator.baseURL(flavor),
    headersTimeoutMs: 5_000,
    idleTimeoutMs: 5_000,
    ...extra,
  } as ParsedEndpointConfig;
}

/** Lets pending I/O (real HTTP to the emulator) make progress without moving simulated time. */
export function ioTurn(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 1));
}

/**
 * Drives simulated time: advances the manual clock by `stepMs` between I/O turns until `done()` holds.
 * Bounded by `maxSimulatedMs` so a broken test ends instead of hanging.
 */
export async function driveUntil(
  clock: ManualClock,
  done: () => boolean,
  options: { stepMs?: number; maxSimulatedMs?: number; ioTurnsPerStep?: number } = {},
): Promise<void> {
  const step = options.stepMs ?? 100;
  const max = options.maxSimulatedMs ?? 600_000;
  const turns = options.ioTurnsPerStep ?? 3;
  const start = clock.now();
  while (!done()) {
    if (clock.now() - start > max)
      throw new Error(`driveUntil: condition not met within ${max} simulated ms`);
    for (let i = 0; i < turns && !done(); i++) await ioTurn();
    if (!done()) clock.advance(step);
  }
}

/** Waits (real I/O turns only, no simulated time) until `done()` holds; bounded in turns. */
export async function settle(done: () => boolean, maxTurns = 2_000): Promise<void> {
  for (let i = 0; i < maxTurns; i++) {
    if (done()) return;
    await ioTurn();
  }
  throw new Error('settle: condition not met');
}
