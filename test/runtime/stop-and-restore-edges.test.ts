/**
 * Edges a hostile review of the core found, each kept as the behaviour it must have: an agent restored mid-turn,
 * a no_agent job that ignores its signal, tools after a cancel, a listener that throws, a key that arrives while
 * agents cool. Real emulator over HTTP; bounded waits only.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createEngine } from '../../src/engines/create-engine.ts';
import type { Engine } from '../../src/core/engine-types.ts';
import { durableAgentState } from '../../src/runtime/agent-snapshot.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import { driveUntil, emulatorEndpoint, settle } from '../support/runtime-harness.ts';

let emulator: Emulator;
let clock: ManualClock;
beforeAll(async () => {
  clock = createManualClock(Date.parse('2026-08-17T07:00:00+09:00'));
  emulator = await startEmulator({ profile: { seed: 37, latency: { minMs: 0, maxMs: 0 } }, clock });
});
afterEach(() => emulator.clearFaults());
afterAll(async () => {
  await emulator.close();
});

const config = () => ({
  endpoints: [emulatorEndpoint(emulator, 'mini', 'openai', 'gpt-4o-mini')],
  chains: { main: ['mini'] },
  concurrency: { limit: 1 },
  agentDefaults: { maxWaitMs: 30_000 },
});

describe('stop and restore edges', () => {
  it('an agent restored mid-turn (cooling) finishes that turn, then serves a new ask; stop resolves', async () => {
    emulator.addFault({ kind: 'rate_limit', match: { flavor: 'openai' }, count: 1, retryAfterMs: 5_000 });
    const first = createSupervisor(config(), { clock, keepAlive: false });
    const kai = first.spawnAgent({ name: 'Kai', chain: 'main' });
    void kai.ask('first');
    await settle(() => kai.state() === 'cooling');
    const snapshot = kai.persistedSnapshot();
    await first.stop({ signal: AbortSignal.abort() });

    const second = createSupervisor(config(), { clock, keepAlive: false });
    const turns: string[] = [];
    second.subscribeEvents((e) => {
      if (e.type === 'turn.completed')
        turns.push(`${e.data.turnId === 'new' ? 'new' : 'restored'} ${e.data.outcome}`);
    });
    const again = second.spawnAgent({ name: 'Kai', chain: 'main' }, { snapshot });
    expect(again.state()).toBe('cooling');
    let settled: string | undefined;
    void again.ask('second', { turnId: 'new' }).then((t) => (settled = t.outcome));
    await driveUntil(clock, () => settled !== undefined, { stepMs: 500, maxSimulatedMs: 60_000 });
    expect(settled).toBe('answered');
    expect(turns).toEqual(['restored answered', 'new answered']);
    await second.stop({ signal: AbortSignal.abort() });
    expect(second.state()).toBe('stopped');
  });

  it('an agent stored mid-call resumes asking for a token and finishes that turn (also a snapshot that held the call as a child)', async () => {
    // The call hangs before its headers (until the deadline): the agent is in `calling` when its state is taken.
    emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'openai' }, count: 1 });
    const first = createSupervisor(config(), { clock, keepAlive: false });
    const kai = first.spawnAgent({ name: 'Kai', chain: 'main' });
    void kai.ask('first', { turnId: 'mid-call' });
    await settle(() => kai.state() === 'calling');
    const snapshot = kai.persistedSnapshot() as Record<string, unknown>;
    expect(snapshot.value).toBe('calling');
    // What is stored durably is already the form it resumes in (a breakwater restoring it as it is resumes it too):
    // queued, no lease, its token request listed as queued's child.
    const stored = durableAgentState(snapshot).snapshot as {
      value: unknown;
      children: Record<string, { src: string }>;
      context: { turn: Record<string, unknown> };
    };
    expect(stored.value).toBe('queued');
    expect(Object.values(stored.children).map((c) => c.src)).toEqual(['acquireToken']);
    expect(stored.context.turn).not.toHaveProperty('leaseId');
    expect(stored.context.turn.turnId).toBe('mid-call');
    await first.stop({ signal: AbortSignal.abort() });
    // An earlier breakwater stored the call as an invoked `callEngine` child: such a snapshot restores the same.
    const older = {
      ...snapshot,
      children: { '0.agent.calling': { src: 'callEngine', snapshot: { status: 'active' } } },
    };
    for (const stored of [snapshot, older]) {
      const second = createSupervisor(config(), { clock, keepAlive: false });
      const turns: string[] = [];
      second.subscribeEvents((e) => {
        if (e.type === 'turn.completed') turns.push(`${e.data.turnId} ${e.data.outcome}`);
      });
      const again = second.spawnAgent({ name: 'Kai', chain: 'main' }, { snapshot: stored });
      // Its lease died with the first runtime: it asks for a token again, holding nothing.
      expect(again.state()).toBe('queued');
      await driveUntil(clock, () => turns.length > 0, { stepMs: 500, maxSimulatedMs: 60_000 });
      expect(turns).toEqual(['mid-call answered']);
      expect(second.tokens().held).toBe(0);
      await second.stop({ signal: AbortSignal.abort() });
    }
  });

  it('stop({ signal }) resolves though a no_agent job ignores its signal; its ask settles cancelled', async () => {
    const supervisor = createSupervisor(config(), { clock, keepAlive: false });
    let release!: () => void;
    const job = new Promise<void>((resolve) => {
      release = resolve;
    });
    const flusher = supervisor.spawnAgent({
      name: 'flusher',
      noAgent: true,
      run: async () => {
        await job;
        return 'ok';
      },
    });
    let outcome: string | undefined;
    void flusher.ask('flush').then((t) => (outcome = t.outcome));
    await settle(() => flusher.state() === 'calling');
    await supervisor.stop({ signal: AbortSignal.abort() });
    expect(outcome).toBe('cancelled');
    expect(supervisor.state()).toBe('stopped');
    release();
  });

  it('no tool starts after the agent was stopped mid-tools', async () => {
    // The real adapter over HTTP, its answer given a second tool call (parallel tool use).
    const twoCalls = (c: Parameters<typeof createEngine>[0]): Engine => {
      const real = createEngine(c, { clock });
      return {
        endpoint: real.endpoint,
        call: async (r) => {
          const res = await real.call(r);
          const t = res.toolCalls[0];
          return t ? { ...res, toolCalls: [t, { ...t, id: `${t.id}-2` }] } : res;
        },
      };
    };
    const supervisor = createSupervisor(config(), { clock, keepAlive: false, createEngine: twoCalls });
    const ran: string[] = [];
    let unblock!: () => void;
    const blocked = new Promise<void>((resolve) => {
      unblock = resolve;
    });
    const kai = supervisor.spawnAgent({
      name: 'Kai',
      chain: 'main',
      tools: {
        placeOrder: {
          description: 'places an order',
          parameters: { type: 'object', properties: { order: { type: 'string' } } },
          run: async (_args, { signal }) => {
            ran.push(signal.aborted ? 'aborted' : 'live');
            if (ran.length === 1) await blocked;
            return 'placed';
          },
        },
      },
    });
    const turn = kai.ask('buy');
    await settle(() => ran.length === 1);
    kai.stop();
    expect((await turn).outcome).toBe('cancelled');
    unblock();
    await settle(() => supervisor.tokens().held === 0);
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
    expect(ran).toEqual(['live']);
    await supervisor.stop();
  });

  it('listeners that throw are logged; the asks settle and no token is held', async () => {
    let thrown = 0;
    const supervisor = createSupervisor(config(), {
      clock,
      keepAlive: false,
      onReport: (r) => {
        if (r.type === 'token.granted' && thrown++ === 0) throw new Error('metrics bug');
      },
    });
    supervisor.subscribe(() => {
      throw new Error('dashboard bug');
    });
    supervisor.subscribeEvents(() => {
      throw new Error('log shipper bug');
    });
    const a = await supervisor.spawnAgent({ name: 'Kai', chain: 'main' }).ask('one');
    const b = await supervisor.spawnAgent({ name: 'Noa', chain: 'main' }).ask('two');
    expect([a.outcome, b.outcome]).toEqual(['answered', 'answered']);
    expect(thrown).toBeGreaterThan(1);
    expect(supervisor.tokens().held).toBe(0);
    await supervisor.stop();
  });

  it('setLimit refuses a limit that is not a whole number ≥ 1, naming it', () => {
    const supervisor = createSupervisor(config(), { clock, keepAlive: false });
    expect(() => supervisor.setLimit(Number(undefined))).toThrow(/supervisor.setLimit at limit: is NaN/);
    expect(() => supervisor.setLimit(0)).toThrow(/whole number of tokens ≥ 1/);
    supervisor.setLimit(2);
    expect(supervisor.tokens().limit).toBe(2);
  });
});
