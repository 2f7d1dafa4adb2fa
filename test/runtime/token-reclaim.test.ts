import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import type { Turn } from '../../src/core/turn.ts';
import { driveUntil, emulatorEndpoint, settle } from '../support/runtime-harness.ts';

let emulator: Emulator;
let clock: ManualClock;
beforeAll(async () => {
  clock = createManualClock(Date.parse('2026-08-17T07:00:00+09:00'));
  emulator = await startEmulator({ profile: { seed: 7 }, clock });
});
afterAll(async () => {
  await emulator.close();
});

describe('supervisor takes tokens back', () => {
  it('an overrun lease cancels its call, records a timeout on the endpoint, and the cap holds throughout', async () => {
    // Every call to the OpenAI-wire server hangs before headers (a stuck upstream the deadline has not cut yet).
    const hang = emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'openai' } });
    emulator.reset();
    const events: RuntimeEvent[] = [];
    const supervisor = createSupervisor(
      {
        endpoints: [
          emulatorEndpoint(emulator, 'stuck', 'openai', 'gpt-4o', undefined, { headersTimeoutMs: 600_000 }),
          emulatorEndpoint(emulator, 'fine', 'anthropic', 'claude-haiku-4-5'),
        ],
        chains: { stuck: ['stuck'], fine: ['fine'] },
        concurrency: { limit: 1, leaseMs: 5_000 },
      },
      { clock, onEvent: (e) => events.push(e), random: () => 0.5 },
    );
    const holder = supervisor.spawnAgent({ name: 'holder', chain: 'stuck', maxAttempts: 1 });
    const waiter = supervisor.spawnAgent({ name: 'waiter', chain: 'fine' });
    let held: Turn | undefined;
    void holder.ask('this call hangs').then((t) => (held = t));
    await settle(() => holder.state() === 'calling' && emulator.stats().inFlight === 1);
    let answered: Turn | undefined;
    void waiter.ask('this one can be answered').then((t) => (answered = t));
    await settle(() => waiter.state() === 'queued');
    expect(supervisor.tokens().held).toBe(1);

    // The lease runs out on the injected clock: the hanging call is cancelled, then the waiter is served.
    await driveUntil(clock, () => answered !== undefined && held !== undefined, {
      stepMs: 1_000,
      maxSimulatedMs: 20_000,
    });
    expect(answered!.outcome).toBe('answered');
    expect(events.some((e) => e.type === 'token.reclaimed' && e.data.holder === 'holder')).toBe(true);
    // The holder's call did not go on behind the scheduler's back: it ended as a timeout of that endpoint.
    expect(held!.faults.map((f) => f.kind)).toEqual(['timeout']);
    expect(held!.outcome).toBe('degraded');
    const attempt = events.find((e) => e.type === 'call.attempt' && e.endpoint === 'stuck');
    expect(attempt?.type === 'call.attempt' && attempt.data.faultKind).toBe('timeout');
    const stuck = supervisor.health().find((h) => h.id === 'stuck')!;
    expect(stuck.cooldownUntil).toBeGreaterThan(0);
    expect(stuck.inFlight).toBe(0);
    // The emulator saw the hanging call end (a record is written when a call ends: the client went away)
    // and never two calls at once.
    const hung = emulator.stats().calls.find((c) => c.flavor === 'openai');
    expect(hung?.fault).toBe('hang_before_headers');
    expect(hung?.endedAt).toBeGreaterThanOrEqual(hung!.startedAt);
    expect(emulator.stats().maxInFlight).toBe(1);

    // Nothing is left held, and the next ask on the healthy endpoint is served at once.
    await settle(() => supervisor.tokens().held === 0);
    expect((await waiter.ask('again')).outcome).toBe('answered');
    emulator.removeFault(hang);
    await supervisor.stop();
    expect(supervisor.tokens()).toMatchObject({ held: 0, queue: [] });
  });

  it('stopping an agent mid-call cancels the call, gives the token back and settles its ask as cancelled', async () => {
    const hang = emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'openai' } });
    const supervisor = createSupervisor(
      {
        endpoints: [
          emulatorEndpoint(emulator, 'stuck', 'openai', 'gpt-4o', undefined, { headersTimeoutMs: 600_000 }),
        ],
        chains: { stuck: ['stuck'] },
        concurrency: { limit: 1 },
      },
      { clock },
    );
    const holder = supervisor.spawnAgent({ name: 'holder', chain: 'stuck' });
    const turn = holder.ask('this call hangs');
    const queued = holder.ask('queued behind it');
    await settle(() => holder.state() === 'calling' && emulator.stats().inFlight === 1);
    holder.stop();
    const [first, second] = await Promise.all([turn, queued]);
    expect(first.outcome).toBe('cancelled');
    expect(second.outcome).toBe('cancelled');
    expect(second.attempts).toBe(0);
    expect(holder.state()).toBe('stopped');
    await settle(() => supervisor.tokens().held === 0 && emulator.stats().inFlight === 0);
    // The name is free again.
    expect(supervisor.agent('holder')).toBeUndefined();
    emulator.removeFault(hang);
    const again = supervisor.spawnAgent({ name: 'holder', chain: 'stuck' });
    expect(again.state()).toBe('idle');
    await supervisor.stop();
  });
});
