/**
 * A cooling agent restored from its STORED state (the slim snapshot as the store keeps it, through JSON) wakes at
 * the deadline kept in its context: not a millisecond before, and with no event sent to it (no TICK, no RECHECK).
 * XState does not persist `after` timers; the agent's wait is a `wakeAt` actor on an absolute instant, which a
 * restored actor starts again. Manual clock: the verdict does not depend on the machine's speed.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AgentContext } from '../../machines/agent.machine.ts';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { durableAgentState } from '../../src/runtime/agent-snapshot.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import { ioTurn, emulatorEndpoint, settle } from '../support/runtime-harness.ts';

let emulator: Emulator;
let clock: ManualClock;
beforeAll(async () => {
  clock = createManualClock(Date.parse('2026-08-17T07:00:00+09:00'));
  emulator = await startEmulator({ profile: { seed: 41, latency: { minMs: 0, maxMs: 0 } }, clock });
});
afterAll(async () => {
  await emulator.close();
});

const config = () => ({
  endpoints: [emulatorEndpoint(emulator, 'mini', 'openai', 'gpt-4o-mini')],
  chains: { main: ['mini'] },
  concurrency: { limit: 1 },
  agentDefaults: { maxWaitMs: 60_000 },
});

describe('a restored cooling agent', () => {
  it('wakes at its stored deadline with no TICK, and finishes its turn', async () => {
    emulator.addFault({ kind: 'rate_limit', match: { flavor: 'openai' }, count: 1, retryAfterMs: 7_000 });
    const first = createSupervisor(config(), { clock, keepAlive: false });
    const kai = first.spawnAgent({ name: 'Kai', chain: 'main', memory: { desk: 'fx' } });
    void kai.ask('first', { turnId: 'cooled' });
    await settle(() => kai.state() === 'cooling');
    // What the store keeps, as it comes back from JSONB.
    const stored = JSON.parse(JSON.stringify(durableAgentState(kai.persistedSnapshot())));
    await first.stop({ signal: AbortSignal.abort() });
    const deadline = (stored.snapshot.context as AgentContext).turn!.coolingUntil!;
    expect(deadline).toBeGreaterThan(clock.now());

    const second = createSupervisor(config(), { clock, keepAlive: false });
    const states: string[] = [];
    second.subscribe((c) => states.push(c.state));
    const outcomes: string[] = [];
    second.subscribeEvents((e) => {
      if (e.type === 'turn.completed') outcomes.push(`${e.data.turnId} ${e.data.outcome}`);
    });
    const again = second.spawnAgent(
      { name: 'Kai', chain: 'main', memory: { desk: 'fx' } },
      {
        snapshot: stored.snapshot,
        memory: { utterances: [], slots: stored.slots, toolResults: stored.toolResults },
      },
    );
    expect(again.state()).toBe('cooling');
    expect(again.memory().slots).toEqual({ desk: 'fx' });

    // One millisecond before the deadline: still cooling, nothing asked.
    clock.advance(deadline - 1 - clock.now());
    for (let i = 0; i < 20; i++) await ioTurn();
    expect(again.state()).toBe('cooling');
    expect(states).toEqual([]);

    // At the deadline it wakes by itself and asks for a token again.
    clock.advance(1);
    await settle(() => outcomes.length > 0);
    expect(states[0]).toBe('queued');
    expect(outcomes).toEqual(['cooled answered']);
    await second.stop({ signal: AbortSignal.abort() });
  });
});
