import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import type { CallMemo } from '../../src/core/call-memo.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

/*
 * An ASK made while a token is free comes with its first call's token: the agent goes from idle straight to
 * calling, in one step. Whenever the token cannot be had at once (all held, someone waiting, a memo to read first)
 * the agent queues as before. Real SDK, real HTTP, the emulator.
 */

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 8, latency: { minMs: 30, maxMs: 30 } } });
});
afterAll(async () => {
  await emulator.close();
});

const config = (limit: number) => ({
  endpoints: [emulatorEndpoint(emulator, 'mini', 'openai', 'gpt-4o-mini')],
  chains: { main: ['mini'] },
  concurrency: { limit },
});

function statesOf(events: RuntimeEvent[], agent: string): string[] {
  return events
    .filter((e): e is Extract<RuntimeEvent, { type: 'agent.state' }> => e.type === 'agent.state')
    .filter((e) => e.agent === agent)
    .map((e) => `${e.data.previous}→${e.data.state}`);
}

describe('an ASK with a token free goes straight to calling', () => {
  it('the first agent calls at once; the one behind it on the only token queues, then calls', async () => {
    emulator.reset();
    const events: RuntimeEvent[] = [];
    const supervisor = createSupervisor(config(1), { onEvent: (e) => events.push(e) });
    const first = supervisor.spawnAgent({ name: 'first', chain: 'main' });
    const second = supervisor.spawnAgent({ name: 'second', chain: 'main' });
    const turns = await Promise.all([first.ask('item 1?'), second.ask('item 2?')]);
    // The next turn of `first`, with the token free again: straight to calling once more.
    const again = await first.ask('item 3?');
    await supervisor.stop();

    expect([...turns, again].map((t) => t.outcome)).toEqual(['answered', 'answered', 'answered']);
    expect(statesOf(events, 'first')).toEqual([
      'idle→calling',
      'calling→idle',
      'idle→calling',
      'calling→idle',
    ]);
    expect(statesOf(events, 'second')).toEqual(['idle→queued', 'queued→calling', 'calling→idle']);
    // One grant per call, each released once; never more than the one token in flight.
    const grants = events.filter((e) => e.type === 'token.granted');
    const releases = events.filter((e) => e.type === 'token.released');
    expect(grants).toHaveLength(3);
    expect(releases).toHaveLength(3);
    expect(emulator.stats().maxInFlight).toBe(1);
  });

  it('with a memo the answer is looked up first, holding nothing: the agent queues', async () => {
    emulator.reset();
    const events: RuntimeEvent[] = [];
    const store = new Map<string, unknown>();
    const memo: CallMemo = {
      recall: async (key) => store.get(key),
      remember: async (key, value) => {
        store.set(key, value);
      },
    };
    const supervisor = createSupervisor(config(2), { onEvent: (e) => events.push(e), memo });
    const agent = supervisor.spawnAgent({ name: 'memoed', chain: 'main' });
    const turn = await agent.ask('item 1?', { turnId: 't1' });
    await supervisor.stop();
    expect(turn.outcome).toBe('answered');
    expect(statesOf(events, 'memoed')).toEqual(['idle→queued', 'queued→calling', 'calling→idle']);
    expect(store.size).toBe(1);
  });

  it('a request that cannot be built fails that turn, settled, at once or behind another; the agent goes on', async () => {
    emulator.reset();
    const supervisor = createSupervisor(config(2));
    const agent = supervisor.spawnAgent({ name: 'careless', chain: 'main' });
    // A caller in plain JavaScript passes no prompt: building the request throws, before any token is taken.
    const broken = await agent.ask(undefined as unknown as string);
    expect(broken.outcome).toBe('failed');
    expect((await agent.ask('item 1?')).outcome).toBe('answered');
    // Behind a running turn (the next ask starts from inside the agent's own update): settled the same way.
    const [first, second] = await Promise.all([
      agent.ask('item 2?'),
      agent.ask(undefined as unknown as string),
    ]);
    expect([first.outcome, second.outcome]).toEqual(['answered', 'failed']);
    expect(supervisor.tokens().held).toBe(0);
    await supervisor.stop();
  });

  it('a cancel right after the ASK leaves no token held', async () => {
    emulator.reset();
    const supervisor = createSupervisor(config(1));
    const agent = supervisor.spawnAgent({ name: 'quitter', chain: 'main' });
    const controller = new AbortController();
    const asked = agent.ask('item 1?', { signal: controller.signal });
    controller.abort();
    expect((await asked).outcome).toBe('cancelled');
    // The token came back: the next ask on the only token is answered.
    expect((await agent.ask('item 2?')).outcome).toBe('answered');
    expect(supervisor.tokens().held).toBe(0);
    await supervisor.stop();
  });
});
