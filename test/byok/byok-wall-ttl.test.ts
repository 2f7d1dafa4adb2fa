import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { systemClock } from '../../src/clock/clock.ts';
import { createScaledClock } from '../../src/clock/scaled-clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import { DEFAULT_BYOK_SESSION, wallClockOf } from '../../src/runtime/supervisor-byok.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

// Issue 19: a BYOK key's idle TTL is the user's time. In agent8-storm (timeScale 15) the runtime runs on a
// simulated clock, and "2 hours without use" used to last 8 real minutes. The vault now keeps the TTL on
// wall time whenever the runtime's clock is a scaled one; a manual clock (tests) is used as it is.

const KEY = 'sk-proj-wallClockTtl00000000000000a1b2';
let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({ profile: { acceptAnyKey: true } });
});
afterAll(() => emulator?.close());

describe('the BYOK idle TTL runs on wall time', () => {
  it('a scaled clock gives the system clock; any other clock is kept', () => {
    expect(wallClockOf(createScaledClock({ scale: 15 }))).toBe(systemClock);
    expect(wallClockOf(createScaledClock({ scale: 1, origin: Date.parse('2026-03-02T09:00:00Z') }))).toBe(
      systemClock,
    );
    expect(wallClockOf(systemClock)).toBe(systemClock);
  });

  it('on a time-scaled runtime (x15, simulated 2026-03-02), a 2 h key expires 2 wall hours from now', async () => {
    const clock = createScaledClock({ scale: 15, origin: Date.parse('2026-03-02T09:00:00+09:00') });
    const supervisor = createSupervisor(
      {
        endpoints: [emulatorEndpoint(emulator, 'primary', 'openai', 'gpt-4o')],
        chains: { main: ['primary'] },
        byok: {
          idleTtlMs: 2 * 3_600_000,
          templates: {
            openai: { provider: 'openai', model: 'gpt-4o-mini', baseURL: emulator.baseURL('openai') },
          },
        },
      },
      { clock },
    );
    try {
      const before = Date.now();
      const receipt = await supervisor.byok.inject(DEFAULT_BYOK_SESSION, 'openai', KEY);
      const after = Date.now();
      // Wall instants, not simulated ones (which are months away from now and run 15x faster).
      expect(receipt.expiresAt).toBeGreaterThanOrEqual(before + 2 * 3_600_000);
      expect(receipt.expiresAt).toBeLessThanOrEqual(after + 2 * 3_600_000);
      expect(Math.abs(receipt.expiresAt - (clock.now() + 2 * 3_600_000))).toBeGreaterThan(24 * 3_600_000);
      expect(supervisor.byok.list()).toHaveLength(1);
    } finally {
      await supervisor.stop();
    }
  });
});
