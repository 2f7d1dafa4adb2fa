import { Writable } from 'node:stream';
import { Redis } from 'ioredis';
import pg from 'pg';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CoordinationOptions } from '../../src/coordination/coordination-options.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import { cleanPool, coordinationCases } from '../support/coordination-env.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';
import { waitFor } from '../support/wait-for.ts';

/*
 * The backend goes away mid-run (a frozen network path: no answer, no reset) or is unreachable from the start:
 * the process stops sending. Its held calls are cancelled before their leases could be handed to another
 * process, new requests are denied (the agents answer degraded), and the log has one line naming the option.
 */

let emulator: Emulator;
let supervisor: Supervisor | undefined;
let proxy: TcpProxy | undefined;
const pools: CoordinationOptions[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 16 } });
});
afterEach(async () => {
  await supervisor?.stop({ signal: AbortSignal.timeout(2_000) });
  supervisor = undefined;
  await proxy?.close();
  proxy = undefined;
  emulator.clearFaults();
  emulator.reset();
  for (const p of pools.splice(0)) await cleanPool(p);
});
afterAll(async () => {
  await emulator.close();
});

function captureLog(): { lines: string[]; logger: pino.Logger } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk).trim());
      done();
    },
  });
  return { lines, logger: pino({ level: 'warn' }, stream) };
}

/** When each token held in the pool expires on the backend, wall-clock ms (read directly, not through the proxy). */
async function leaseExpiries(o: CoordinationOptions): Promise<number[]> {
  if (o.backend === 'postgres') {
    const c = new pg.Client({ connectionString: o.url });
    await c.connect();
    try {
      const r = await c.query(
        'select (extract(epoch from expires_at) * 1000)::float8 as ms from coordination_tokens where pool = $1 and slot >= 0 and holder is not null and expires_at > now()',
        [o.pool],
      );
      return r.rows.map((row) => Number(row.ms));
    } finally {
      await c.end();
    }
  }
  const r = new Redis(o.url!);
  try {
    const flat = await r.zrange(`${o.keyPrefix}${o.pool}:tokens`, '0', '-1', 'WITHSCORES');
    return flat.filter((_, i) => i % 2 === 1).map(Number);
  } finally {
    r.disconnect();
  }
}

function runtime(coordination: CoordinationOptions, logger: pino.Logger): Supervisor {
  return createSupervisor(
    {
      endpoints: [emulatorEndpoint(emulator, 'sonnet', 'anthropic', 'claude-sonnet-4-6')],
      chains: { premium: ['sonnet'] },
      concurrency: { limit: 3 },
      agentDefaults: { maxWaitMs: 20_000, maxAttempts: 1 },
    },
    { coordination, logger },
  );
}

describe.each(coordinationCases())('$name lost mid-run', ({ options: make }) => {
  it('held calls are cancelled before the backend could reissue their leases, nothing new is sent, one error line', async () => {
    const base = make();
    pools.push(base);
    const target = new URL(base.url!);
    proxy = await startTcpProxy({
      host: target.hostname,
      port: Number(target.port || (base.backend === 'redis' ? 6379 : 5432)),
    });
    const url = new URL(base.url!);
    url.port = String(proxy.port);
    // A held call is fenced a fifth of the TTL before its lease runs out unless a renewal (every third of it) came
    // back, and a grant slower than that is refused as late. At 1.5 s, a loaded machine's pause of under a second
    // did either before all three calls were held; at 5 s only a pause of ~3 s does, and the fence's lead on the
    // backend's expiry is a second.
    const ttl = 5_000;
    const { lines, logger } = captureLog();
    supervisor = runtime({ ...base, url: url.toString(), leaseTtlMs: ttl }, logger);
    emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'anthropic' }, count: 3 });
    const agents = [0, 1, 2].map((i) =>
      supervisor!.spawnAgent({ name: `a${i}`, chain: 'premium', tier: 'analysis' }),
    );
    const turns = agents.map((a) => a.ask('hold on'));
    await waitFor(() => emulator.stats().held === 3, 'three held calls');
    expect(supervisor.tokens().held).toBe(3);

    proxy.setMode('freeze');
    // From now on no renewal reaches the backend: its leases' expiry (its own clock, the same wall clock as the
    // emulator's here) is the instant another process could be handed these tokens.
    const expiries = await leaseExpiries(base);
    expect(expiries).toHaveLength(3);
    // Fencing: every held call ends at the emulator (its client left) before its lease could be reissued.
    await waitFor(() => emulator.stats().held === 0, 'the held calls to be cancelled');
    const ended = emulator.stats().calls.filter((c) => c.status === 'hang');
    expect(ended).toHaveLength(3);
    for (const c of ended) expect(c.endedAt).toBeLessThan(Math.min(...expiries));
    for (const t of await Promise.all(turns)) expect(t.outcome).not.toBe('answered');

    // Fail closed: a new ask is denied without any call upstream.
    const calls = emulator.stats().totalCalls;
    const next = await agents[0]!.ask('anything now?');
    expect(next.outcome).toBe('degraded');
    expect(next.degradedReason).toMatch(/coordination\.url/);
    expect(emulator.stats().totalCalls).toBe(calls);
    const errors = lines.filter((l) => /"level":50/.test(l));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/coordination\.url: (PostgreSQL|Redis) at .* (is unreachable|failed)/);
  }, 60_000);

  it('unreachable from the start: asks answer degraded, one line names coordination.url', async () => {
    const base = make();
    const url = new URL(base.url!);
    url.port = '1';
    const { lines, logger } = captureLog();
    supervisor = runtime({ ...base, url: url.toString() }, logger);
    const agent = supervisor.spawnAgent({ name: 'a', chain: 'premium', tier: 'analysis' });
    const turn = await agent.ask('hello?');
    expect(turn.outcome).toBe('degraded');
    expect(emulator.stats().totalCalls).toBe(0);
    const errors = lines.filter((l) => /"level":50/.test(l));
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatch(/coordination\.url: .* is unreachable \(could not connect: connection refused/);
  }, 30_000);
});
