import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { Engine } from '../../src/core/engine-types.ts';
import { type Fault, isEngineFaultError } from '../../src/core/fault.ts';
import { GEMINI_DAILY_RESET_ZONE, msUntilDailyReset } from '../../src/engines/wire/daily-quota-reset.ts';
import { wireTimeEngines } from '../../src/runs/wire-time-engines.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

/*
 * Gemini's per-day quota (a 429 naming `GenerateRequestsPerDayPerProjectPerModel`) disables the key until the end
 * of the provider's day. A scenario's emulator lives on the run's clock, so its day is the run's: the disable is the
 * same whatever hour of the wall the scenario runs at. The real SDK over real HTTP, through the engines a scenario
 * run makes (`wireTimeEngines`), at two wall times whose distances to Pacific midnight differ by 10 h.
 */

/** The run's clock: a scenario's `start:` (22:00 Pacific on 2026-03-01: 2 h before Gemini's reset). */
const RUN_NOW = Date.parse('2026-03-02T06:00:00Z');
const WALL_TIMES = [Date.parse('2026-12-01T10:00:00Z'), Date.parse('2026-12-01T20:00:00Z')] as const;

let emulator: Emulator;
const clock = createManualClock(RUN_NOW);

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 9, latency: { minMs: 0, maxMs: 0 } }, clock });
  emulator.addFault({ kind: 'credit_exhausted', match: { flavor: 'gemini' } });
});
afterAll(async () => {
  await emulator.close();
});

async function perDayFault(engine: Engine): Promise<Fault> {
  const err = await engine
    .call({ messages: [{ role: 'user', content: 'status?' }], maxTokens: 32, idempotencyKey: 'day-1' })
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  if (!isEngineFaultError(err)) throw new Error(`expected an engine fault, got ${String(err)}`);
  return err.fault;
}

/** The per-day disable of one Gemini endpoint made as a scenario run makes it, with the wall at `wall`. */
async function disableAt(wall: number, onEmulator: boolean): Promise<number | undefined> {
  const config = emulatorEndpoint(emulator, 'flash', 'gemini', 'gemini-2.5-flash');
  const runtime = { endpoints: [onEmulator ? { id: 'flash', emulator: 'gemini' } : { id: 'flash' }] };
  const { createEngine } = wireTimeEngines(runtime, { clock, timeScale: 1, wallNow: () => wall });
  if (!createEngine) throw new Error('a scenario run makes its own engines here');
  const fault = await perDayFault(createEngine(config));
  expect(fault.kind).toBe('credit_exhausted');
  expect(fault.disableReason).toMatch(/per-day quota GenerateRequestsPerDayPerProjectPerModel/);
  return fault.disableForMs;
}

describe("a per-day quota on the emulator counts the run's day", () => {
  it('disables the key for the same span at two wall times: until the run clock reaches Pacific midnight', async () => {
    const spans = [];
    for (const wall of WALL_TIMES) spans.push(await disableAt(wall, true));
    const runDay = msUntilDailyReset(RUN_NOW, GEMINI_DAILY_RESET_ZONE);
    expect(runDay).toBe(2 * 3_600_000);
    expect(spans).toEqual([runDay, runDay]);
  });

  it('a real provider (not on the run clock) still ends its day on the wall clock', async () => {
    // The two wall times lie 10 h apart on the same Pacific day: their disables differ by exactly that.
    const spans = [];
    for (const wall of WALL_TIMES) spans.push(await disableAt(wall, false));
    expect(spans).toEqual(WALL_TIMES.map((w) => msUntilDailyReset(w, GEMINI_DAILY_RESET_ZONE)));
    expect(spans[0]! - spans[1]!).toBe(10 * 3_600_000);
  });
});
