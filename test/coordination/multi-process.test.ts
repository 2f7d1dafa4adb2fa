import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CoordinationOptions } from '../../src/coordination/coordination-options.ts';
import { createScaledClock } from '../../src/clock/scaled-clock.ts';
import type { CallRecord } from '../../src/emulator/emulator-types.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { cleanPool, coordinationCases, perFileDatabase } from '../support/coordination-env.ts';
import { waitFor } from '../support/wait-for.ts';
import { readJsonLines } from '../support/json-lines.ts';
import { childScript } from '../support/test-child.ts';

/*
 * Three real worker processes (supervisors on one shared quota) against one emulator over real HTTP. The
 * verdicts come from the emulator's own record of calls (its in-flight high-water mark, each call's start and
 * end on its clock), never from how fast this machine is.
 */

// At most 14 PostgreSQL connections at once: three coordination children and the test (measured peak, with room).
perFileDatabase({ connections: 14 });

const CHILD = childScript(fileURLToPath(new URL('./coordination-worker-child.ts', import.meta.url)));
const LIMIT = 3;

interface Worker {
  readonly child: ChildProcess;
  readonly lines: Record<string, unknown>[];
  stderr: string;
  /** Asks the worker how many global tokens it holds now. */
  held(): Promise<number>;
  exited: Promise<number | null>;
}

const workers: Worker[] = [];
const pools: CoordinationOptions[] = [];
let emulator: Emulator;

/** What the worker child takes beyond the defaults (another emulator, sonnet's limits, a scaled clock). */
interface WorkerExtra {
  readonly baseURL?: string;
  readonly limits?: { rpm?: number; tpm?: number };
  readonly timeScale?: number;
  readonly drainMs?: number;
  readonly breaker?: { openMs?: number; maxOpenMs?: number };
}

function startWorker(
  coordination: CoordinationOptions,
  agents = 4,
  maxWaitMs = 10_000,
  extra: WorkerExtra = {},
): Worker {
  const spec = {
    baseURL: emulator.baseURL('anthropic'),
    coordination,
    agents,
    limit: LIMIT,
    maxWaitMs,
    ...extra,
  };
  const child = spawn(process.execPath, [CHILD, JSON.stringify(spec)], {
    stdio: ['pipe', 'pipe', 'pipe'],
    env: { ...process.env, BREAKWATER_LOG_LEVEL: '' },
  });
  const lines: Record<string, unknown>[] = [];
  const w: Worker = {
    child,
    lines,
    stderr: '',
    held: async () => {
      const seen = lines.length;
      child.stdin!.write('held\n');
      await waitFor(
        () => lines.slice(seen).some((l) => l.type === 'held'),
        'the worker to say what it holds',
      );
      return lines.slice(seen).find((l) => l.type === 'held')!.n as number;
    },
    exited: new Promise((resolve) => child.on('exit', (code) => resolve(code))),
  };
  readJsonLines(child.stdout!, (line) => lines.push(line));
  child.stderr!.setEncoding('utf8').on('data', (s: string) => {
    w.stderr += s;
  });
  workers.push(w);
  return w;
}

async function stopAll(): Promise<void> {
  for (const w of workers)
    if (w.child.exitCode === null && w.child.signalCode === null) w.child.stdin!.write('stop\n');
  await Promise.all(
    workers.map(async (w) => {
      const timer = setTimeout(() => w.child.kill('SIGKILL'), 15_000);
      await w.exited;
      clearTimeout(timer);
    }),
  );
  workers.length = 0;
}

/** Calls on the emulator's clock, in start order. */
const calls = (): CallRecord[] => [...emulator.stats().calls].sort((a, b) => a.startedAt - b.startedAt);

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 15, latency: { minMs: 20, maxMs: 60 } } });
});
afterEach(async () => {
  await stopAll();
  emulator.clearFaults();
  emulator.reset();
  for (const p of pools.splice(0)) await cleanPool(p);
});
afterAll(async () => {
  await emulator.close();
});

describe.each(coordinationCases())('three worker processes on $name', ({ options: make }) => {
  const fresh = (extra: Partial<CoordinationOptions> = {}) => {
    const o = { ...make(), ...extra };
    pools.push(o);
    return o;
  };

  it('never have more than the global limit in flight at the emulator; once a process has the shared cooldown of a 429 it starts no call until it ends', async () => {
    const o = fresh();
    for (let i = 0; i < 3; i++) startWorker(o);
    // Twelve agents contend for three tokens.
    await waitFor(() => emulator.stats().totalCalls >= 60, '60 calls from the three workers', 60_000);
    expect(new Set(workers.map((w) => w.lines.some((l) => l.type === 'turn'))).has(false)).toBe(false);

    emulator.addFault({ kind: 'rate_limit', match: { flavor: 'anthropic' }, retryAfterMs: 3_000, count: 1 });
    await waitFor(() => calls().some((c) => c.status === 429), 'the 429', 30_000);
    const hit = calls().find((c) => c.status === 429)!;
    // Every process learns of the cooldown (the one that got the 429 from it, the others from the backend)…
    await waitFor(
      () => workers.every((w) => w.lines.some((l) => l.type === 'cooled')),
      'every worker to see the cooldown',
      30_000,
    );
    await waitFor(
      () => calls().some((c) => c.status === 200 && c.startedAt >= hit.endedAt + 3_000),
      'calls again after the cooldown',
      30_000,
    );
    // …and from the instant it saw it (its own clock, the same wall clock as its calls' starts) until the cooldown
    // is over, it starts no call. How soon it saw it is a measurement (npm run bench:coordination), not a verdict.
    for (const w of workers) {
      const cooled = w.lines.find((l) => l.type === 'cooled')!;
      const [from, until] = [cooled.at as number, cooled.until as number];
      expect(until).toBeGreaterThan(hit.endedAt);
      const during = w.lines.filter(
        (l) => l.type === 'call' && (l.startedAt as number) > from && (l.startedAt as number) < until,
      );
      expect(during).toEqual([]);
    }
    expect(emulator.stats().maxInFlight).toBeGreaterThanOrEqual(2);
    expect(emulator.stats().maxInFlight).toBeLessThanOrEqual(LIMIT);
    for (const w of workers) expect(w.stderr).toBe('');
  }, 120_000);

  it("sonnet's RPM is the pool's: three workers together never put more than it in any minute, by the emulator's record", async () => {
    // A scaled clock (one simulated minute = 6 real seconds) for the emulator and the workers alike; the emulator
    // enforces the key's quota (a call over it would be a 429) and records each call's arrival on that clock.
    const scale = 10;
    const rpm = 3;
    const limited = await startEmulator({
      clock: createScaledClock({ scale }),
      profile: {
        seed: 16,
        latency: { minMs: 200, maxMs: 600 },
        keys: [
          {
            alias: 'desk',
            key: 'sk-test-sonnet-000000000000',
            quotas: { models: { 'claude-sonnet-4-6': { rpm } } },
          },
        ],
      },
    });
    try {
      const o = fresh();
      // Agents paced for the next minute need not be waited for when the test is done.
      const extra = {
        baseURL: limited.baseURL('anthropic'),
        limits: { rpm },
        timeScale: scale,
        drainMs: 200,
      };
      for (let i = 0; i < 3; i++) startWorker(o, 2, 600_000, extra);
      // Into the second minute: each worker alone would have sent its own 3 in the first.
      await waitFor(() => limited.stats().totalCalls >= rpm + 2, `${rpm + 2} calls`, 60_000);
      const record = [...limited.stats().calls].sort((a, b) => a.startedAt - b.startedAt);
      expect(record.filter((c) => c.status === 429)).toEqual([]);
      // Any RPM + 1 calls in arrival order span at least a minute on the emulator's clock.
      for (let i = 0; i + rpm < record.length; i++)
        expect(record[i + rpm]!.startedAt - record[i]!.startedAt).toBeGreaterThanOrEqual(60_000);
      for (const w of workers) expect(w.stderr).toBe('');
    } finally {
      await stopAll();
      await limited.close();
    }
  }, 120_000);

  it('a recovering endpoint is probed by one worker at a time, not by each', async () => {
    const o = fresh();
    const extra = { breaker: { openMs: 300, maxOpenMs: 600 }, drainMs: 500 };
    for (let i = 0; i < 3; i++) startWorker(o, 2, 1_000, extra);
    await waitFor(() => emulator.stats().totalCalls >= 12, '12 calls from the three workers', 60_000);
    // Every call 429s from now on: the breakers open (shared), and HALF-OPEN probes fail again and again.
    emulator.addFault({
      kind: 'rate_limit',
      match: { flavor: 'anthropic' },
      retryAfterMs: 100,
      count: 100_000,
    });
    const probes = () =>
      workers.flatMap((w, i) =>
        w.lines
          .filter((l) => l.type === 'call' && l.probe === true)
          .map((l) => ({
            worker: i,
            start: l.startedAt as number,
            end: (l.startedAt as number) + (l.latencyMs as number),
          })),
      );
    await waitFor(() => probes().length >= 6, 'six probes', 60_000);
    const sorted = probes().sort((a, b) => a.start - b.start);
    // One at a time across the pool: each probe starts once the one before it (whichever worker sent it) ended.
    for (let i = 1; i < sorted.length; i++)
      expect(sorted[i]!.start).toBeGreaterThanOrEqual(sorted[i - 1]!.end);
    for (const w of workers) expect(w.stderr).toBe('');
  }, 120_000);

  it('kill -9 of a worker holding tokens: they come back to the survivors once their leases ran out, and the limit still holds', async () => {
    const ttl = 1_500;
    const o = fresh({ leaseTtlMs: ttl });
    for (let i = 0; i < 3; i++) startWorker(o, 3, 60_000);
    await waitFor(() => emulator.stats().totalCalls >= 20, '20 calls from the three workers', 60_000);
    // Slow calls: the victim holds its tokens long past the TTL if nobody takes them back.
    emulator.addFault({ kind: 'hang_before_headers', match: { flavor: 'anthropic' }, count: 1_000 });
    await waitFor(() => emulator.stats().held === LIMIT, 'three calls held by the emulator', 30_000);
    const holding = await Promise.all(workers.map((w) => w.held()));
    expect(holding.reduce((a, b) => a + b, 0)).toBe(LIMIT);
    const lost = Math.max(...holding);
    const victim = workers[holding.indexOf(lost)]!;
    expect(lost).toBeGreaterThan(0);
    // The fault stays: every call hangs, so a token is only ever freed by a lease running out.
    victim.child.kill('SIGKILL');
    await victim.exited;
    // The victim's held calls end at the emulator when its sockets close (recorded as `hang`).
    await waitFor(
      () => calls().filter((c) => c.status === 'hang').length === lost,
      'the victim calls to end',
      30_000,
    );
    // The survivors' waiting agents take the victim's tokens once its leases ran out: the limit is in flight again,
    // never more.
    await waitFor(() => emulator.stats().held === LIMIT, "the victim's tokens to come back", 30_000);
    const after = await Promise.all(workers.filter((w) => w !== victim).map((w) => w.held()));
    expect(after.reduce((a, b) => a + b, 0)).toBe(LIMIT);
    expect(emulator.stats().maxInFlight).toBeLessThanOrEqual(LIMIT);
    emulator.clearFaults();
  }, 120_000);
  it.each([
    ['null', () => 'null'],
    ['a message without facts', (pool: string) => JSON.stringify({ pool, endpointId: 'sonnet', from: 'v0' })],
  ])(
    'a worker survives a malformed health message (%s) on its pool',
    async (_, payload) => {
      const o = fresh();
      const w = startWorker(o, 2);
      const turns = () => w.lines.filter((l) => l.type === 'turn').length;
      await waitFor(() => turns() > 0, 'the worker answering', 60_000);
      const text = payload(o.pool!);
      if (o.backend === 'postgres') {
        const c = new pg.Client({ connectionString: o.url });
        await c.connect();
        await c.query('select pg_notify($1, $2)', ['breakwater_health', text]);
        await c.end();
      } else {
        const r = new Redis(o.url!);
        await r.publish(`${o.keyPrefix}${o.pool}:health-changed`, text);
        r.disconnect();
      }
      const before = turns();
      await waitFor(
        () => turns() >= before + 4 || w.child.exitCode !== null,
        'more turns or an exit',
        60_000,
      );
      expect(w.child.exitCode).toBeNull();
      expect(w.stderr).not.toMatch(/TypeError/);
    },
    120_000,
  );
});
