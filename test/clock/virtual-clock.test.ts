import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { sleep, systemClock } from '../../src/clock/clock.ts';
import {
  createVirtualClock,
  holdClock,
  parkOnClock,
  type VirtualClock,
} from '../../src/clock/virtual-clock.ts';
import { createEngine } from '../../src/engines/create-engine.ts';
import { startEmulator } from '../../src/emulator/emulator-server.ts';

/*
 * The virtual clock: time jumps to the next timer when nothing but timers is left, stands still while
 * real work holds it, and may move while held work is parked on the clock itself.
 */

let clock: VirtualClock | undefined;
afterEach(() => clock?.stop());

describe('createVirtualClock', () => {
  it('runs a day of timers in order, at once, each at its own simulated time', async () => {
    clock = createVirtualClock({ origin: 1_000 });
    const fired: [string, number][] = [];
    const c = clock;
    c.setTimeout(() => fired.push(['b', c.now()]), 3_600_000);
    c.setTimeout(() => fired.push(['a', c.now()]), 60_000);
    const cleared = c.setTimeout(() => fired.push(['never', c.now()]), 1);
    c.clearTimeout(cleared);
    await sleep(c, 86_400_000);
    expect(fired).toEqual([
      ['a', 61_000],
      ['b', 3_601_000],
    ]);
    expect(c.now()).toBe(1_000 + 86_400_000);
    expect(c.pending()).toBe(0);
    expect(c.forcedJumps).toBe(0);
  });

  it('stands still while work holds it, and moves once the hold is released', async () => {
    clock = createVirtualClock();
    const c = clock;
    const release = c.hold();
    let fired = false;
    c.setTimeout(() => {
      fired = true;
    }, 5_000);
    // Real work takes real time: many event-loop turns pass and simulated time does not move.
    for (let i = 0; i < 50; i++) await new Promise((r) => setTimeout(r, 1));
    expect(fired).toBe(false);
    expect(c.now()).toBe(0);
    release();
    await sleep(c, 5_000);
    expect(fired).toBe(true);
  });

  it('a hold matched by a park (a request waiting for a simulated delay) lets time move', async () => {
    clock = createVirtualClock();
    const c = clock;
    const release = c.hold();
    const unpark = c.park();
    await sleep(c, 10_000);
    expect(c.now()).toBe(10_000);
    unpark();
    release();
  });

  it('gives up on a hold that never ends after maxHoldRealMs, and counts it', async () => {
    clock = createVirtualClock({ maxHoldRealMs: 20 });
    const c = clock;
    c.hold();
    await sleep(c, 1_000);
    expect(c.now()).toBe(1_000);
    expect(c.forcedJumps).toBe(1);
  });

  it('holdClock and parkOnClock are no-ops on any other clock', () => {
    expect(() => holdClock(systemClock)()).not.toThrow();
    expect(() => parkOnClock(systemClock)()).not.toThrow();
  });
});

describe('a virtual clock with real HTTP', () => {
  it("a response in transit is never overtaken: a slow server does not trip the call's deadline", async () => {
    // A raw server that answers after 300 real ms (a loaded machine), while the engine's header deadline
    // is 1 simulated second and another timer is pending 2 simulated seconds ahead.
    const server = createServer((_req, res) => {
      setTimeout(() => {
        res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            id: 'chatcmpl-1',
            object: 'chat.completion',
            created: 1,
            model: 'gpt-4o',
            choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
          }),
        );
      }, 300);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    clock = createVirtualClock();
    const c = clock;
    try {
      const engine = createEngine(
        {
          id: 'slow',
          provider: 'openai',
          model: 'gpt-4o',
          apiKey: 'sk-virtual-clock-0000000001',
          baseURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
          headersTimeoutMs: 1_000,
        },
        { clock: c },
      );
      let other = false;
      c.setTimeout(() => {
        other = true;
      }, 2_000);
      const result = await engine.call({
        messages: [{ role: 'user', content: 'hi' }],
        maxTokens: 8,
        idempotencyKey: 'vc-1',
      });
      expect(result.text).toBe('ok');
      expect(result.latencyMs).toBe(0);
      expect(other).toBe(false);
      expect(c.forcedJumps).toBe(0);
    } finally {
      await new Promise<void>((r) => server.close(() => r()));
    }
  });

  it("the emulator's latency is simulated: a 90 s answer takes no real time, and the deadline still cuts a hang", async () => {
    clock = createVirtualClock({ origin: 0 });
    const c = clock;
    const emulator = await startEmulator({
      clock: c,
      profile: { latency: { minMs: 90_000, maxMs: 90_000 } },
    });
    try {
      const config = {
        id: 'emu',
        provider: 'openai' as const,
        model: 'gpt-4o',
        apiKey: 'sk-virtual-clock-0000000002',
        baseURL: emulator.baseURL('openai'),
        headersTimeoutMs: 120_000,
      };
      const result = await createEngine(config, { clock: c }).call({
        messages: [{ role: 'user', content: 'hi' }],
        maxTokens: 8,
        idempotencyKey: 'vc-2',
      });
      expect(result.latencyMs).toBe(90_000);
      emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'openai' } });
      const before = c.now();
      const err = await createEngine(config, { clock: c })
        .call({ messages: [{ role: 'user', content: 'hi' }], maxTokens: 8, idempotencyKey: 'vc-3' })
        .then(
          () => undefined,
          (e: unknown) => e as { fault?: { kind: string } },
        );
      expect(err?.fault?.kind).toBe('timeout');
      expect(c.now() - before).toBe(120_000);
      expect(c.forcedJumps).toBe(0);
    } finally {
      await emulator.close();
    }
  });
});
