/**
 * bench:coordination — the cost of sharing one quota between processes.
 *
 * Three processes (real child processes) take and give back global tokens on one backend at once, each with
 * `--concurrency` loops, for `--seconds`: a grant is `tryAcquire` + `release` (one round trip each). Measured side
 * by side, same machine, same run:
 * - `postgres`: the shipped backend, lease rows taken with `FOR UPDATE SKIP LOCKED` (+ NOTIFY on release);
 * - `postgres-advisory`: the alternative, session advisory locks (`pg_try_advisory_lock`), one connection per
 *   held token — measured to justify the choice;
 * - `redis`: the Lua-script backend.
 * Printed: grant latency p50/p99 (ms) across the three processes and grants/s in total. Targets on PostgreSQL:
 * p50 ≤ 2 ms, p99 ≤ 10 ms, ≥ 5,000 grants/s.
 * Then, per shipped backend, health propagation: how long a published endpoint health change (a 429's cooldown)
 * takes to reach another process's listener, p50/p99 over `--messages` changes one after another (publish call →
 * the other connection's onHealth). Target: p99 ≤ 100 ms (the multi-process tests check the property — no call
 * started once the cooldown arrived — not this figure, which depends on the machine).
 *
 * Run: `DATABASE_URL=postgres://… REDIS_URL=redis://… npm run bench:coordination`
 * (options: `--seconds 5 --concurrency 4 --limit 12 --modes postgres,postgres-advisory,redis`).
 */
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { Redis } from 'ioredis';
import pg from 'pg';
import { resolveCoordination } from '../src/coordination/coordination-options.ts';
import { createCoordinationBackend } from '../src/coordination/create-coordination.ts';
import { row, writeResult } from './lib/bench-result.ts';
import { percentile, round } from './lib/stats.ts';

const { values: args } = parseArgs({
  options: {
    seconds: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '4' },
    limit: { type: 'string', default: '12' },
    modes: { type: 'string', default: 'postgres,postgres-advisory,redis' },
    messages: { type: 'string', default: '200' },
    takes: { type: 'string', default: '2000' },
  },
});
const PROCESSES = 3;
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
const KEY_PREFIX = process.env.REDIS_KEY_PREFIX ?? 'bwbench:';
const CHILD = fileURLToPath(new URL('./lib/coordination-bench-child.ts', import.meta.url));
type Mode = 'postgres' | 'redis' | 'postgres-advisory';

async function runMode(mode: Mode) {
  const pool = `bench-${randomUUID().slice(0, 8)}`;
  const children = Array.from({ length: PROCESSES }, (_, i) => {
    const spec = {
      mode,
      url: mode === 'redis' ? REDIS_URL : DATABASE_URL,
      pool,
      keyPrefix: KEY_PREFIX,
      limit: Number(args.limit),
      concurrency: Number(args.concurrency),
      durationMs: Number(args.seconds) * 1_000,
      id: `bench-${i}`,
    };
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(spec)], {
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let out = '';
    const ready = new Promise<void>((resolve) =>
      child.stdout.setEncoding('utf8').on('data', (s: string) => {
        out += s;
        if (out.includes('ready\n')) resolve();
      }),
    );
    const done = new Promise<{ latencies: number[]; refused: number; cpuMicros: number }>((resolve, reject) =>
      child.on('exit', (code) => {
        if (code !== 0) return reject(new Error(`${mode} child exited with ${code}`));
        resolve(JSON.parse(out.split('\n').filter(Boolean).at(-1)!));
      }),
    );
    return { child, ready, done };
  });
  await Promise.all(children.map((c) => c.ready));
  const started = performance.now();
  for (const c of children) c.child.stdin.write('go\n');
  const results = await Promise.all(children.map((c) => c.done));
  const seconds = (performance.now() - started) / 1_000;
  await cleanup(mode, pool);
  const latencies = results.flatMap((r) => r.latencies).sort((a, b) => a - b);
  return {
    mode,
    grants: latencies.length,
    refused: results.reduce((n, r) => n + r.refused, 0),
    p50Ms: round(percentile(latencies, 50)),
    p99Ms: round(percentile(latencies, 99)),
    grantsPerSecond: Math.round(latencies.length / seconds),
    // The client side's CPU per grant (the three processes together): what a busy machine's load does not change.
    clientCpuMicrosPerGrant: Math.round(
      results.reduce((n, r) => n + r.cpuMicros, 0) / Math.max(1, latencies.length),
    ),
  };
}

async function cleanup(mode: Mode, pool: string): Promise<void> {
  if (mode === 'postgres') {
    const c = new pg.Client({ connectionString: DATABASE_URL });
    await c.connect();
    await c.query('delete from coordination_tokens where pool = $1', [pool]);
    await c.query('delete from coordination_health where pool = $1', [pool]);
    await c.query('delete from coordination_rates where pool = $1', [pool]);
    await c.end();
  } else if (mode === 'redis') {
    const r = new Redis(REDIS_URL);
    const keys = await r.keys(`${KEY_PREFIX}${pool}:*`);
    if (keys.length > 0) await r.del(...keys);
    r.disconnect();
  }
}

const modes = args.modes.split(',') as Mode[];
console.log(
  `bench:coordination — ${PROCESSES} processes × ${args.concurrency} loops, limit ${args.limit}, ${args.seconds} s each (load ${loadavg()[0]!.toFixed(2)})`,
);
console.log(row('backend', 'p50 ms', 'p99 ms', 'grants/s', 'refused', 'client µs/grant'));
const results = [];
for (const mode of modes) {
  const r = await runMode(mode);
  results.push(r);
  console.log(row(mode, r.p50Ms, r.p99Ms, r.grantsPerSecond, r.refused, r.clientCpuMicrosPerGrant));
}
const pgResult = results.find((r) => r.mode === 'postgres');
if (pgResult) {
  const met = (ok: boolean) => (ok ? 'met' : 'MISSED');
  console.log(
    `targets on PostgreSQL: p50 ≤ 2 ms ${met(pgResult.p50Ms <= 2)}, p99 ≤ 10 ms ${met(pgResult.p99Ms <= 10)}, ≥ 5,000 grants/s ${met(pgResult.grantsPerSecond >= 5_000)}`,
  );
}
/** Publish → another connection's listener, one change at a time; ms. */
async function propagation(mode: 'postgres' | 'redis', messages: number) {
  const pool = `bench-${randomUUID().slice(0, 8)}`;
  const open = async (id: string) => {
    const b = createCoordinationBackend(
      resolveCoordination(
        {
          backend: mode,
          url: mode === 'redis' ? REDIS_URL : DATABASE_URL,
          pool,
          processId: id,
          ...(mode === 'redis' ? { keyPrefix: KEY_PREFIX } : {}),
        },
        id,
      )!,
    );
    await b.connect();
    return b;
  };
  const [a, b] = [await open('pub'), await open('sub')];
  let arrived: ((until: number) => void) | undefined;
  b.onHealth((m) => arrived?.(m.facts.cooldownUntil));
  const latencies: number[] = [];
  try {
    for (let i = 0; i < messages; i++) {
      const until = Date.now() + 3_000 + i;
      const got = new Promise<void>((resolve) => {
        arrived = (u) => u === until && resolve();
      });
      const t0 = performance.now();
      await a.publishHealth('sonnet', { cooldownUntil: until, disabledUntil: 0, openUntil: null });
      await got;
      latencies.push(performance.now() - t0);
    }
  } finally {
    await Promise.all([a.close(), b.close()]);
    await cleanup(mode, pool);
  }
  latencies.sort((x, y) => x - y);
  return { mode, messages, p50Ms: round(percentile(latencies, 50)), p99Ms: round(percentile(latencies, 99)) };
}

console.log(
  `health propagation — ${args.messages} changes one after another (load ${loadavg()[0]!.toFixed(2)})`,
);
console.log(row('backend', 'p50 ms', 'p99 ms'));
const propagationResults = [];
for (const mode of modes.filter((m): m is 'postgres' | 'redis' => m === 'postgres' || m === 'redis')) {
  const r = await propagation(mode, Number(args.messages));
  propagationResults.push(r);
  console.log(row(mode, r.p50Ms, r.p99Ms));
}
for (const r of propagationResults)
  console.log(`target on ${r.mode}: propagation p99 ≤ 100 ms ${r.p99Ms <= 100 ? 'met' : 'MISSED'}`);

/** One process taking shared RPM/TPM permits one after another (limits never reached); ms per take. */
async function ratePermits(mode: 'postgres' | 'redis', takes: number) {
  const pool = `bench-${randomUUID().slice(0, 8)}`;
  const backend = createCoordinationBackend(
    resolveCoordination(
      {
        backend: mode,
        url: mode === 'redis' ? REDIS_URL : DATABASE_URL,
        pool,
        processId: 'rate',
        ...(mode === 'redis' ? { keyPrefix: KEY_PREFIX } : {}),
      },
      'rate',
    )!,
  );
  await backend.connect();
  const latencies: number[] = [];
  try {
    const ask = { key: 'sonnet', windowMs: 60_000, rpm: 1e9, tpm: 1e12, tokens: 500 };
    for (let i = 0; i < takes; i++) {
      const t0 = performance.now();
      const r = await backend.takeRate(ask);
      latencies.push(performance.now() - t0);
      if (!r.ok) throw new Error('a permit below the limit was refused');
    }
  } finally {
    await backend.close();
    await cleanup(mode, pool);
  }
  latencies.sort((x, y) => x - y);
  return { mode, takes, p50Ms: round(percentile(latencies, 50)), p99Ms: round(percentile(latencies, 99)) };
}

console.log(
  `shared RPM/TPM permits — ${args.takes} takes one after another (load ${loadavg()[0]!.toFixed(2)})`,
);
console.log(row('backend', 'p50 ms', 'p99 ms'));
const rateResults = [];
for (const mode of modes.filter((m): m is 'postgres' | 'redis' => m === 'postgres' || m === 'redis')) {
  const r = await ratePermits(mode, Number(args.takes));
  rateResults.push(r);
  console.log(row(mode, r.p50Ms, r.p99Ms));
}

const path = await writeResult('coordination', {
  processes: PROCESSES,
  concurrency: Number(args.concurrency),
  limit: Number(args.limit),
  seconds: Number(args.seconds),
  results,
  propagation: propagationResults,
  ratePermits: rateResults,
  measuredAs:
    'each of 3 child processes runs `concurrency` loops of tryAcquire + release on one pool of `limit` tokens; latency per grant (acquire + release), refused attempts retried at once and not counted; grants/s = grants of all processes / wall time',
  ratePermitsMeasuredAs:
    'one process takes a shared RPM/TPM permit (takeRate: request + 500 estimated tokens) one after another, 60 s window, limits never reached; one round trip each',
  propagationMeasuredAs:
    'one process publishes an endpoint cooldown, another connection of the same pool receives it (onHealth); time from the publish call to the receipt, one change at a time',
  targets: { postgresP50Ms: 2, postgresP99Ms: 10, postgresGrantsPerSecond: 5_000, propagationP99Ms: 100 },
});
console.log(`written ${path}`);
