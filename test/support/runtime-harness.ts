import type { ManualClock } from '../../src/clock/clock.ts';
import type { ParsedEndpointConfig } from '../../src/engines/endpoint-config.ts';
import type { Emulator } from '../../src/emulator/emulator-server.ts';
import type { EmulatorFlavor } from '../../src/emulator/emulator-types.ts';

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
 * Drives simulated time: advances the manual clock by `stepMs` between I/O turns until `done()` holds. Time moves
 * only while no request is on the wire (every engine call in flight is parked on a simulated delay, as the
 * emulator's latency and hangs are: `clock.busy()` is false), so a slow or loaded machine sees the same timeline
 * as a fast one. Bounded by `maxSimulatedMs` so a broken test ends instead of hanging, and by `maxInFlightRealMs`
 * of real time waiting on one request.
 */
export async function driveUntil(
  clock: ManualClock,
  done: () => boolean,
  options: {
    stepMs?: number;
    maxSimulatedMs?: number;
    ioTurnsPerStep?: number;
    maxInFlightRealMs?: number;
  } = {},
): Promise<void> {
  const step = options.stepMs ?? 100;
  const max = options.maxSimulatedMs ?? 600_000;
  const turns = options.ioTurnsPerStep ?? 3;
  const maxInFlight = options.maxInFlightRealMs ?? 30_000;
  const start = clock.now();
  while (!done()) {
    if (clock.now() - start > max)
      throw new Error(`driveUntil: condition not met within ${max} simulated ms`);
    for (let i = 0; i < turns && !done(); i++) await ioTurn();
    if (done()) return;
    if (clock.busy?.()) {
      // A request is on the wire: wait for it (and then for what its answer sets going) before time moves.
      const waitingSince = Date.now();
      while (!done() && clock.busy?.()) {
        if (Date.now() - waitingSince > maxInFlight)
          throw new Error(`driveUntil: a request was still on the wire after ${maxInFlight} real ms`);
        await ioTurn();
      }
      continue;
    }
    clock.advance(step);
  }
}

/**
 * Waits (real I/O turns only, no simulated time) until `done()` holds. Bounded by real time, not by a count of
 * turns: a loaded machine makes fewer turns per second, and the verdict must not depend on that.
 */
export async function settle(done: () => boolean, maxRealMs = 20_000): Promise<void> {
  const since = Date.now();
  while (!done()) {
    if (Date.now() - since > maxRealMs)
      throw new Error(`settle: condition not met within ${maxRealMs} real ms`);
    await ioTurn();
  }
}
