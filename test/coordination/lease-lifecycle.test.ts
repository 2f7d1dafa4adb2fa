import net from 'node:net';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CoordinationOptions } from '../../src/coordination/coordination-options.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import { cleanPool, coordinationCases } from '../support/coordination-env.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';
import { waitFor } from '../support/wait-for.ts';

/*
 * A global token's life seen from outside the process: a call reaches the upstream only while its lease is live on
 * the backend (a grant that arrives too late is not used), and a graceful stop gives the tokens back at once.
 */

const pools: CoordinationOptions[] = [];
const closers: (() => Promise<void> | void)[] = [];
let emulator: Emulator;

/** A TCP proxy whose replies (server → client) arrive `delayMs` late once `delaying` is set; order is kept. */
async function startReplyDelayProxy(port: number, delayMs: number) {
  const state = { delaying: false };
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect(port, '127.0.0.1');
    sockets.add(client).add(upstream);
    client.pipe(upstream);
    let last = 0;
    upstream.on('data', (chunk) => {
      const at = Math.max(Date.now() + (state.delaying ? delayMs : 0), last);
      last = at;
      setTimeout(() => client.destroyed || client.write(chunk), at - Date.now());
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
    };
    for (const s of [client, upstream]) {
      s.on('error', end);
      s.on('close', end);
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  closers.push(
    () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  );
  return { port: (server.address() as net.AddressInfo).port, state };
}

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 1515, latency: { minMs: 20, maxMs: 40 } } });
});
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
  emulator.clearFaults();
  emulator.reset();
  for (const p of pools.splice(0)) await cleanPool(p);
});
afterAll(async () => {
  await emulator.close();
});

describe.each(coordinationCases())('$name global token lifecycle', ({ name, options: make }) => {
  it('a call reaches the upstream only while its global lease is live: a grant that arrives too late is not used', async () => {
    // A lease is fenced a fifth of its TTL before it runs out unless a renewal came back: at 1 s, a loaded machine's
    // pause of half a second cut the warm-up's call (answered `cancelled`). At 4 s only a pause of ~3 s does.
    const ttl = 4_000;
    const o = { ...make(), leaseTtlMs: ttl, processId: 'a' };
    pools.push(o);
    const target = new URL(o.url!);
    const proxy = await startReplyDelayProxy(
      Number(target.port || (name === 'redis' ? 6379 : 5432)),
      1.5 * ttl,
    );
    const viaProxy = new URL(o.url!);
    viaProxy.port = String(proxy.port);
    const s = createSupervisor(
      {
        endpoints: [emulatorEndpoint(emulator, 'sonnet', 'anthropic', 'claude-sonnet-4-6')],
        chains: { premium: ['sonnet'] },
        concurrency: { limit: 1 },
        agentDefaults: { maxWaitMs: 6_000, maxAttempts: 1 },
      },
      { coordination: { ...o, url: viaProxy.toString() } },
    );
    closers.push(() => s.stop({ signal: AbortSignal.timeout(5_000) }));
    const agent = s.spawnAgent({ name: 'x', chain: 'premium', tier: 'analysis' });
    expect((await agent.ask('warm up')).outcome).toBe('answered');
    const calls = emulator.stats().totalCalls;
    // From now on the backend's replies to this process (its grants included) arrive 1.5 TTLs late: by the time it
    // learns it was granted a token, the lease has run out on the backend and could be anyone's. However slow the
    // machine, a grant is only later: every one is too late to use.
    proxy.state.delaying = true;
    const turn = await agent.ask('on a late grant');
    // Every grant came too late to be used: nothing was sent, the agent answered degraded within its max wait.
    expect(emulator.stats().totalCalls).toBe(calls);
    expect(turn.outcome).toBe('degraded');
  }, 60_000);

  it('a graceful stop gives its global tokens back (others need not wait for the TTL)', async () => {
    const o = { ...make(), leaseTtlMs: 60_000, processId: 'stopper' };
    pools.push(o);
    const s = createSupervisor(
      {
        endpoints: [emulatorEndpoint(emulator, 'sonnet', 'anthropic', 'claude-sonnet-4-6')],
        chains: { premium: ['sonnet'] },
        concurrency: { limit: 3 },
        agentDefaults: { maxWaitMs: 5_000, maxAttempts: 1 },
      },
      { coordination: o },
    );
    emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'anthropic' }, count: 3 });
    const turns = [0, 1, 2].map((i) =>
      s.spawnAgent({ name: `a${i}`, chain: 'premium', tier: 'analysis' }).ask('hold on'),
    );
    await waitFor(() => emulator.stats().held === 3, 'three held calls');
    await s.stop({ signal: AbortSignal.timeout(5_000) });
    await Promise.allSettled(turns);
    let held: number;
    if (name === 'postgres') {
      const c = new pg.Client({ connectionString: o.url });
      await c.connect();
      const r = await c.query(
        'select count(*)::int as n from coordination_tokens where pool = $1 and slot >= 0 and holder is not null and expires_at > now()',
        [o.pool],
      );
      await c.end();
      held = r.rows[0].n as number;
    } else {
      const r = new Redis(o.url!);
      held = await r.zcount(`${o.keyPrefix}${o.pool}:tokens`, '(0', '+inf');
      r.disconnect();
    }
    expect(held).toBe(0);
  }, 60_000);
});
