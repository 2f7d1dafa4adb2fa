import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/index.ts';
import type { RuntimeEvent } from '../../src/events/runtime-event.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import type { Turn } from '../../src/runtime/turn.ts';
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
  it('a holder that overruns its lease loses the token; another agent is served meanwhile', async () => {
    // Every call to the OpenAI-wire server hangs before headers (a stuck upstream the deadline has not cut yet).
    emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'openai' } });
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
      { clock, onEvent: (e) => events.push(e) },
    );
    const holder = supervisor.spawnAgent({ name: 'holder', chain: 'stuck' });
    const waiter = supervisor.spawnAgent({ name: 'waiter', chain: 'fine' });
    void holder.ask('this call hangs');
    await settle(() => holder.state() === 'calling');
    let answered: Turn | undefined;
    void waiter.ask('this one can be answered').then((t) => (answered = t));
    await settle(() => waiter.state() === 'queued');
    expect(supervisor.tokens().held).toBe(1);

    // The lease runs out on the injected clock: the token is taken back and the waiter is served.
    await driveUntil(clock, () => answered !== undefined, { stepMs: 1_000, maxSimulatedMs: 20_000 });
    expect(answered!.outcome).toBe('answered');
    expect(events.some((e) => e.type === 'token.reclaimed' && e.data.holder === 'holder')).toBe(true);
    expect(holder.state()).toBe('calling');

    // Stopping the stuck agent takes back whatever it still holds; nothing is left held.
    holder.stop();
    await settle(() => supervisor.tokens().held === 0);
    emulator.clearFaults();
    await supervisor.stop({ signal: AbortSignal.abort() });
  });
});
