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
import { waitFor } from '../support/wait-for.ts';

/*
 * Two runtimes on one pool (as two processes would be; the backend is real, only the process boundary is not
 * crossed here — test/coordination/multi-process.test.ts crosses it): what one learns about an endpoint reaches
 * the other.
 */

let emulator: Emulator;
const supervisors: Supervisor[] = [];
const pools: CoordinationOptions[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 17, defaultQuotas: { rpm: 10 } } });
});
afterEach(async () => {
  await Promise.all(supervisors.splice(0).map((s) => s.stop({ signal: AbortSignal.timeout(2_000) })));
  emulator.clearFaults();
  emulator.reset();
  for (const p of pools.splice(0)) await cleanPool(p);
});
afterAll(async () => {
  await emulator.close();
});

function runtime(
  coordination: CoordinationOptions,
  processId: string,
  logger?: pino.Logger,
  maxWaitMs = 1_000,
): Supervisor {
  const s = createSupervisor(
    {
      endpoints: [
        emulatorEndpoint(emulator, 'sonnet', 'anthropic', 'claude-sonnet-4-6'),
        emulatorEndpoint(emulator, 'haiku', 'anthropic', 'claude-haiku-4-5'),
      ],
      chains: { premium: ['sonnet'] },
      agentDefaults: { maxWaitMs, maxAttempts: 1 },
    },
    { coordination: { ...coordination, processId }, ...(logger ? { logger } : {}) },
  );
  supervisors.push(s);
  return s;
}

const sonnet = (s: Supervisor) => s.health().find((h) => h.id === 'sonnet')!;

/** Raw payloads on the pool's health channel, in order, as anyone able to write to it could send them. */
async function publishRaw(o: CoordinationOptions, payloads: readonly string[]): Promise<void> {
  if (o.backend === 'postgres') {
    const c = new pg.Client({ connectionString: o.url });
    await c.connect();
    try {
      for (const p of payloads) await c.query('select pg_notify($1, $2)', ['breakwater_health', p]);
    } finally {
      await c.end();
    }
  } else {
    const r = new Redis(o.url!);
    try {
      for (const p of payloads) await r.publish(`${o.keyPrefix}${o.pool}:health-changed`, p);
    } finally {
      r.disconnect();
    }
  }
}

/** Stored health rows written straight into the backend (as a buggy or older process could have left them). */
async function storeRaw(o: CoordinationOptions, rows: readonly [string, string][]): Promise<void> {
  if (o.backend === 'postgres') {
    const c = new pg.Client({ connectionString: o.url });
    await c.connect();
    try {
      for (const [id, facts] of rows)
        await c.query(
          'insert into coordination_health (pool, endpoint_id, facts) values ($1, $2, $3::jsonb)',
          [o.pool, id, facts],
        );
    } finally {
      await c.end();
    }
  } else {
    const r = new Redis(o.url!);
    try {
      for (const [id, facts] of rows) await r.hset(`${o.keyPrefix}${o.pool}:health`, id, facts);
      await r.pexpire(`${o.keyPrefix}${o.pool}:health`, 60_000);
    } finally {
      r.disconnect();
    }
  }
}

/** A valid message (a cooldown of sonnet for a minute) sent after the others: once absorbed, they were all read. */
const marker = (o: CoordinationOptions) =>
  JSON.stringify({
    pool: o.pool,
    endpointId: 'sonnet',
    from: 'z',
    facts: { cooldownUntil: Date.now() + 60_000, disabledUntil: 0, openUntil: null },
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

describe.each(coordinationCases())('shared endpoint health on $name', ({ options: make }) => {
  it('a credit loss seen by one process disables the endpoint for the other', async () => {
    const pool = make();
    pools.push(pool);
    // a's first ask waits for its connection to the backend (seconds on a loaded machine), not a max wait of 1 s.
    const [a, b] = [runtime(pool, 'a', undefined, 30_000), runtime(pool, 'b')];
    emulator.addFault({ kind: 'credit_exhausted', match: { flavor: 'anthropic' }, count: 1 });
    const turn = await a.spawnAgent({ name: 'x', chain: 'premium', tier: 'analysis' }).ask('hello');
    expect(turn.faults.map((f) => f.kind)).toContain('credit_exhausted');
    await waitFor(() => sonnet(b).disabledUntil > b.clock.now(), 'the disable to reach process b');
    expect(sonnet(b).disabledReason).toBe('credit exhausted');
    // b sends nothing to the disabled endpoint.
    const calls = emulator.stats().totalCalls;
    const other = await b.spawnAgent({ name: 'y', chain: 'premium', tier: 'analysis' }).ask('hello?');
    expect(other.outcome).toBe('degraded');
    expect(emulator.stats().totalCalls).toBe(calls);
  }, 30_000);

  it("the provider's rate-limit counts seen by one process correct the other's bucket", async () => {
    const pool = make();
    pools.push(pool);
    const [a, b] = [runtime(pool, 'a'), runtime(pool, 'b')];
    const agent = a.spawnAgent({ name: 'x', chain: 'premium', tier: 'analysis' });
    for (let i = 0; i < 4; i++) expect((await agent.ask(`q${i}`)).outcome).toBe('answered');
    // The key's quota is 10 RPM: after a's 4 calls the headers say 6 left, and b (no call of its own) knows it.
    await waitFor(
      () => sonnet(b).rpm?.available !== undefined && sonnet(b).rpm!.available! <= 6,
      "b's bucket",
    );
    expect(sonnet(b).rpm?.capacity).toBe(10);
  }, 30_000);
  it("another process's failed probes travel with its OPEN breaker: this one backs off from the same count", async () => {
    const pool = make();
    pools.push(pool);
    const b = runtime(pool, 'b');
    // Connected and listening once it has answered.
    expect((await b.spawnAgent({ name: 'y', chain: 'premium', tier: 'analysis' }).ask('hi')).outcome).toBe(
      'answered',
    );
    const open = (facts: Record<string, unknown>) =>
      JSON.stringify({ pool: pool.pool, endpointId: 'sonnet', from: 'z', facts });
    await publishRaw(pool, [
      // Not counts: dropped whole (nothing of them is applied).
      open({ cooldownUntil: 0, disabledUntil: 0, openUntil: Date.now() + 90_000, failedProbes: -1 }),
      open({ cooldownUntil: 0, disabledUntil: 0, openUntil: Date.now() + 90_000, failedProbes: 1.5 }),
      open({ cooldownUntil: 0, disabledUntil: 0, openUntil: Date.now() + 60_000, failedProbes: 3 }),
    ]);
    await waitFor(() => sonnet(b).breaker === 'open', "the peer's OPEN breaker to reach b");
    expect(sonnet(b).failedProbes).toBe(3);
    expect(sonnet(b).openUntil! - b.clock.now()).toBeLessThanOrEqual(60_000);
  }, 30_000);

  it('malformed health messages are dropped (one warning), the valid one after them is absorbed', async () => {
    const o = make();
    pools.push(o);
    const { lines, logger } = captureLog();
    const b = runtime(o, 'b', logger);
    expect((await b.spawnAgent({ name: 'y', chain: 'premium', tier: 'analysis' }).ask('hi')).outcome).toBe(
      'answered',
    );
    const bad = [
      'null',
      '42',
      JSON.stringify({ pool: o.pool, endpointId: 'sonnet', from: 'z' }),
      JSON.stringify({ pool: o.pool, endpointId: 'sonnet', from: 'z', facts: null }),
      JSON.stringify({
        pool: o.pool,
        endpointId: 'sonnet',
        from: 'z',
        facts: { cooldownUntil: 'soon', disabledUntil: 0, openUntil: null },
      }),
      JSON.stringify({
        pool: o.pool,
        endpointId: 'sonnet',
        from: 'z',
        facts: { cooldownUntil: 0, disabledUntil: 0, openUntil: null, requests: 'many' },
      }),
    ];
    await publishRaw(o, [...bad, marker(o)]);
    await waitFor(() => sonnet(b).cooldownUntil > b.clock.now(), 'the valid message to be absorbed');
    const warnings = lines.filter((l) => /malformed shared health message/.test(l));
    expect(warnings).toHaveLength(1);
  }, 30_000);

  it('one malformed stored row does not keep the others from being applied on joining', async () => {
    const o = make();
    pools.push(o);
    await storeRaw(o, [
      ['haiku', o.backend === 'postgres' ? 'null' : '{not json'],
      ['sonnet', JSON.stringify({ cooldownUntil: Date.now() + 60_000, disabledUntil: 0, openUntil: null })],
    ]);
    const b = runtime(o, 'b');
    // Joining happens once the backend is connected (on the first token request).
    await b.spawnAgent({ name: 'y', chain: 'premium', tier: 'analysis' }).ask('hi');
    await waitFor(() => sonnet(b).cooldownUntil > b.clock.now(), 'the stored cooldown to be applied');
  }, 30_000);

  it("another process's counts never raise this one's capacity, and counts from the future are not applied", async () => {
    const o = make();
    pools.push(o);
    const b = runtime(o, 'b');
    // b's own call: the headers say the key allows 10 requests a minute.
    expect((await b.spawnAgent({ name: 'y', chain: 'premium', tier: 'analysis' }).ask('hi')).outcome).toBe(
      'answered',
    );
    await waitFor(() => sonnet(b).rpm?.capacity === 10, "b's bucket to learn its capacity");
    const available = sonnet(b).rpm!.available!;
    const counts = (requests: object, observedAt: number) =>
      JSON.stringify({
        pool: o.pool,
        endpointId: 'sonnet',
        from: 'z',
        facts: { cooldownUntil: 0, disabledUntil: 0, openUntil: null, requests, observedAt },
      });
    await publishRaw(o, [
      counts({ limit: 1_000, remaining: 999 }, Date.now()),
      // An hour ahead: it would stay "fresh" for an hour.
      counts({ limit: 10, remaining: 0 }, Date.now() + 3_600_000),
      marker(o),
    ]);
    await waitFor(() => sonnet(b).cooldownUntil > b.clock.now(), 'the marker to be absorbed');
    expect(sonnet(b).rpm?.capacity).toBe(10);
    expect(sonnet(b).rpm?.available).toBe(available);
  }, 30_000);
});
