/*
 * One process of bench:coordination: `concurrency` loops of acquire + release on a shared backend for
 * `durationMs`, started when the parent writes "go". Prints one JSON line: the latency of every grant
 * (acquire + release, ms), how many asks were refused, and the process's CPU time over the loops (µs).
 */
import { performance } from 'node:perf_hooks';
import pg from 'pg';
import { resolveCoordination } from '../../src/coordination/coordination-options.ts';
import { createCoordinationBackend } from '../../src/coordination/create-coordination.ts';

interface ChildSpec {
  readonly mode: 'postgres' | 'redis' | 'postgres-advisory';
  readonly url: string;
  readonly pool: string;
  readonly keyPrefix: string;
  readonly limit: number;
  readonly concurrency: number;
  readonly durationMs: number;
  readonly id: string;
}

const spec = JSON.parse(process.argv[2]!) as ChildSpec;

/** acquire + release once; false when no token was free (retried, not counted). */
type Loop = () => Promise<boolean>;

async function leaseLoops(): Promise<{ loops: Loop[]; close: () => Promise<void> }> {
  const backend = createCoordinationBackend(
    resolveCoordination(
      {
        backend: spec.mode === 'redis' ? 'redis' : 'postgres',
        url: spec.url,
        pool: spec.pool,
        keyPrefix: spec.keyPrefix,
        processId: spec.id,
      },
      spec.id,
    )!,
  );
  await backend.connect();
  const loop: Loop = async () => {
    const r = await backend.tryAcquire(spec.limit);
    if (!r.ok) return false;
    await backend.release(r.lease);
    return true;
  };
  return { loops: Array.from({ length: spec.concurrency }, () => loop), close: () => backend.close() };
}

/** The alternative measured side by side: session advisory locks, one connection per loop (a token pins it). */
async function advisoryLoops(): Promise<{ loops: Loop[]; close: () => Promise<void> }> {
  const clients = await Promise.all(
    Array.from({ length: spec.concurrency }, async () => {
      const c = new pg.Client({ connectionString: spec.url });
      await c.connect();
      return c;
    }),
  );
  const loops = clients.map(
    (c): Loop =>
      async () => {
        const r = await c.query<{ s: number }>(
          'select s from generate_series(0, $1::int - 1) s where pg_try_advisory_lock(1515, s) limit 1',
          [spec.limit],
        );
        const slot = r.rows[0]?.s;
        if (slot === undefined) return false;
        await c.query('select pg_advisory_unlock(1515, $1::int)', [slot]);
        return true;
      },
  );
  return { loops, close: async () => void (await Promise.all(clients.map((c) => c.end()))) };
}

const { loops, close } = spec.mode === 'postgres-advisory' ? await advisoryLoops() : await leaseLoops();
process.stdout.write('ready\n');
await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
const latencies: number[] = [];
let refused = 0;
const cpu0 = process.cpuUsage();
const end = performance.now() + spec.durationMs;
await Promise.all(
  loops.map(async (loop) => {
    while (performance.now() < end) {
      const t0 = performance.now();
      if (await loop()) latencies.push(performance.now() - t0);
      else refused++;
    }
  }),
);
const cpu = process.cpuUsage(cpu0);
await close();
// Exit only once the line is flushed: a pipe write is asynchronous.
process.stdout.write(`${JSON.stringify({ latencies, refused, cpuMicros: cpu.user + cpu.system })}\n`, () =>
  process.exit(0),
);
