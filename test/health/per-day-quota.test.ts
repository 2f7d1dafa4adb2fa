import { afterAll, beforeAll, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { GEMINI_DAILY_RESET_ZONE, msUntilDailyReset } from '../../src/engines/wire/daily-quota-reset.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

/*
 * Gemini's per-day quota, engine to health: the emulator answers the Gemini key with its 429 RESOURCE_EXHAUSTED
 * naming a `…PerDay…` quota. The key is disabled until Gemini's daily reset (00:00 America/Los_Angeles, read on
 * the wall clock), not for the 1 h credit cooldown, and the health view says why.
 */

let emulator: Emulator;
const clock = createManualClock(Date.parse('2026-08-17T07:00:00+09:00'));

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 4, latency: { minMs: 0, maxMs: 0 } }, clock });
});
afterAll(async () => {
  await emulator.close();
});

it('a per-day quota disables the Gemini key until its daily reset, and the health view names the quota and the reset', async () => {
  emulator.addFault({ kind: 'credit_exhausted', match: { flavor: 'gemini' } });
  const supervisor = createSupervisor(
    {
      endpoints: [
        emulatorEndpoint(emulator, 'flash', 'gemini', 'gemini-2.5-flash'),
        emulatorEndpoint(emulator, 'backup', 'openai', 'gpt-4o-mini'),
      ],
      chains: { main: ['flash', 'backup'] },
      concurrency: { limit: 1 },
    },
    { clock, keepAlive: false },
  );
  try {
    const wallBefore = Date.now();
    const turn = await supervisor.spawnAgent({ name: 'Kai', chain: 'main' }).ask('status?');
    const wallAfter = Date.now();
    expect(turn.outcome).toBe('fallback');
    expect(turn.faults.map((f) => f.kind)).toEqual(['credit_exhausted']);
    const flash = supervisor.health().find((h) => h.id === 'flash')!;
    expect(flash.disabledReason).toMatch(
      /^per-day quota GenerateRequestsPerDayPerProjectPerModel\S* exhausted, until Gemini's daily reset at 00:00 America\/Los_Angeles$/,
    );
    // Until the reset (measured on the wall clock when the answer came), not creditCooldownMs (1 h).
    const disabledFor = flash.disabledUntil - clock.now();
    // (Read before and after the call: one of them is on the answer's side of a midnight passing meanwhile.)
    const near = [wallBefore, wallAfter].map((w) =>
      Math.abs(disabledFor - msUntilDailyReset(w, GEMINI_DAILY_RESET_ZONE)),
    );
    expect(Math.min(...near)).toBeLessThanOrEqual(60_000);
  } finally {
    await supervisor.stop();
  }
});
