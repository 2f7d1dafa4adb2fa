import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { wireTimeEngines } from '../../src/runs/wire-time-engines.ts';

// Which of a run's endpoints and BYOK templates live in wall time (their waits scaled onto the run's clock).

const runtime = {
  endpoints: [{ id: 'emu', emulator: 'openai' }, { id: 'real' }],
  byok: {
    templates: { ' OpenAI ': { provider: 'openai' }, emuKeys: { provider: 'openai', emulator: 'openai' } },
  },
};
const clock = createManualClock(0);

describe('wireTimeEngines', () => {
  it('at timeScale 15: endpoints and templates outside the emulator are scaled, the emulator ones are not', () => {
    const wire = wireTimeEngines(runtime, { clock, timeScale: 15 });
    expect([...wire.wallTimeEndpoints]).toEqual(['real']);
    expect(wire.createEngine).toBeTypeOf('function');
    // Template names are trimmed and case-insensitive, as the vault resolves them.
    expect(wire.byokWire?.('openai')).toEqual({ wireScale: 15 });
    expect(wire.byokWire?.('OpenAI')).toEqual({ wireScale: 15 });
    // An emulator template is not scaled; its per-day quotas count the run's day (the run's clock).
    const emuWire = wire.byokWire?.('emukeys');
    expect(Object.keys(emuWire ?? {})).toEqual(['quotaDayNow']);
    clock.advance(1_234);
    expect(emuWire?.quotaDayNow?.()).toBe(clock.now());
    expect(clock.now()).toBe(1_234);
    expect([wire.wireScaleOf('real'), wire.wireScaleOf('emu')]).toEqual([15, 1]);
    // The token lease in the wall-time endpoints' time: the default 120 s, or the config's own, × 15; a day at most.
    expect(wire.withLease({} as { concurrency?: object }).concurrency).toEqual({ leaseMs: 1_800_000 });
    expect(wire.withLease({ concurrency: { limit: 2, leaseMs: 10_000 } }).concurrency).toEqual({
      limit: 2,
      leaseMs: 150_000,
    });
    expect(wire.withLease({ concurrency: { leaseMs: 86_400_000 } }).concurrency).toEqual({
      leaseMs: 86_400_000,
    });
  });

  it('at timeScale 1, or on a virtual clock, nothing is scaled; without emulator endpoints the default engines are used', () => {
    const realOnly = { endpoints: [{ id: 'real' }], byok: { templates: { openai: { provider: 'openai' } } } };
    for (const [wire, emulated] of [
      [wireTimeEngines(runtime, { clock, timeScale: 1 }), true],
      [wireTimeEngines(runtime, { clock, timeScale: 15, virtualTime: true }), true],
      [wireTimeEngines(realOnly, { clock, timeScale: 1 }), false],
      [wireTimeEngines(realOnly, { clock, timeScale: 15, virtualTime: true }), false],
    ] as const) {
      expect(wire.wallTimeEndpoints.size).toBe(0);
      // Emulator endpoints still get engines of the run's own (their per-day quotas count the run's day).
      expect(wire.createEngine === undefined).toBe(!emulated);
      expect(wire.byokWire === undefined).toBe(!emulated);
      if (emulated) expect(wire.byokWire?.('openai')).toEqual({});
      const config = { concurrency: { leaseMs: 10_000 } };
      expect(wire.withLease(config)).toBe(config);
    }
  });

  it('an emulator given by URL is on its own wall clock: its endpoints and templates are scaled too', () => {
    const wire = wireTimeEngines(runtime, { clock, timeScale: 15, emulatorOnRunClock: false });
    expect([...wire.wallTimeEndpoints].sort()).toEqual(['emu', 'real']);
    expect(wire.byokWire?.('emukeys')).toEqual({ wireScale: 15 });
  });

  it("a wall clock of the run's own (a virtual clock's) reaches every engine, BYOK keys' too", () => {
    const wallNow = () => 42;
    const wire = wireTimeEngines(runtime, { clock, timeScale: 1, virtualTime: true, wallNow });
    expect(wire.createEngine).toBeTypeOf('function');
    expect(wire.byokWire?.('openai')).toEqual({ wallNow });
  });
});
