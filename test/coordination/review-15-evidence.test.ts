import { type ChildProcess, spawn } from 'node:child_process';
import net from 'node:net';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { CoordinationOptions } from '../../src/coordination/coordination-options.ts';
import { type Emulator, startEmulator } from '../../src/emulator/index.ts';
import { createSupervisor } from '../../src/runtime/create-supervisor.ts';
import { cleanPool, coordinationCases } from '../support/coordination-env.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';
import { waitFor } from '../support/wait-for.ts';

/*
 * Review 15 evidence: each test states the promise as it should hold. They FAIL on the reviewed commit (c3a36cd);
 * each one names the cause in the review report.
 */

const CHILD = fileURLToPath(new URL('./coordination-worker-child.ts', import.meta.url));

interface Worker {
  readonly child: ChildProcess;
  turns: number;
  stderr: string;
  readonly exited: Promise<string>;
}

const workers: Worker[] = [];
const pools: CoordinationOptions[] = [];
const closers: (() => Promise<void> | void)[] = [];
let emulator: Emulator;

function startWorker(coordination: CoordinationOptions, agents: number, limit: number): Worker {
  const spec = { baseURL: emulator.baseURL('anthropic'), coordination, agents, limit, maxWaitMs: 60_000 };
  const child = spawn(process.execPath, ['--import', 'tsx', CHILD, JSON.stringify(spec)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const w: Worker = {
    child,
    turns: 0,
    stderr: '',
    exited: new Promise((resolve) => child.on('exit', (code, signal) => resolve(`${code}/${signal}`))),
  };
  child.stdout!.setEncoding('utf8').on('data', (s: string) => {
    w.turns += s.split('\n').filter((l) => l.includes('"turn"')).length;
  });
  child.stderr!.setEncoding('utf8').on('data', (s: string) => {
    w.stderr += s;
  });
  workers.push(w);
  return w;
}

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
  for (const w of workers.splice(0)) {
    if (w.child.exitCode === null && w.child.signalCode === null) w.child.kill('SIGKILL');
    await w.exited;
  }
  for (const c of closers.splice(0)) await c();
  emulator.clearFaults();
  emulator.reset();
  for (const p of pools.splice(0)) await cleanPool(p);
});
afterAll(async () => {
  await emulator.close();
});

describe.each(coordinationCases())('review 15 on $name', ({ name, options: make }) => {
  it.each([
    ['null', () => 'null'],
    ['a message without facts', (pool: string) => JSON.stringify({ pool, endpointId: 'sonnet', from: 'v0' })],
  ])(
    'a worker survives a malformed health message (%s) on its pool',
    async (_, payload) => {
      const o = make();
      pools.push(o);
      const w = startWorker(o, 2, 2);
      await waitFor(() => w.turns > 0, 'the worker answering', 60_000);
      const text = payload(o.pool!);
      if (name === 'postgres') {
        const c = new pg.Client({ connectionString: o.url });
        await c.connect();
        await c.query('select pg_notify($1, $2)', ['breakwater_health', text]);
        await c.end();
      } else {
        const r = new Redis(o.url!);
        await r.publish(`${o.keyPrefix}${o.pool}:health-changed`, text);
        r.disconnect();
      }
      const turns = w.turns;
      await waitFor(() => w.turns >= turns + 4 || w.child.exitCode !== null, 'more turns or an exit', 60_000);
      expect(w.child.exitCode).toBeNull();
      expect(w.stderr).not.toMatch(/TypeError/);
    },
    120_000,
  );
});
