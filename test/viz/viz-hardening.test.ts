import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_MACHINE_VERSION } from '../../machines/agent.machine.ts';
import { createManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { createSupervisor, type Supervisor } from '../../src/runtime/create-supervisor.ts';
import { type BreakwaterDatabase, openDatabase } from '../../src/store/open-database.ts';
import { createRunStore, type RunStore } from '../../src/store/run-store.ts';
import { createLiveSource, type LiveSource } from '../../src/viz/live-source.ts';
import { startVizServer, type VizServer } from '../../src/viz/viz-server.ts';
import { state, turn } from '../store/store-test-support.ts';
import { emulatorEndpoint } from '../support/runtime-harness.ts';

// Issue 19: the visualizer is left open on a shared machine. A web page must not read a run through
// DNS rebinding (Host and Origin are checked), a name lookup must match own entries only
// (`?agent=__proto__` answered `{}`), and clients that open /api/live and never read must not make the
// run buffer without end (a cap on live streams, a cap on what waits for one reader, a cap on
// connections). Real HTTP and real sockets throughout.

const RUN_ID = 'viz-hardening-1';
const clock = createManualClock(Date.parse('2026-08-17T07:00:00+09:00'));
let emulator: Emulator;
let database: BreakwaterDatabase;
let store: RunStore;
let supervisor: Supervisor;
let live: LiveSource;
const sockets: Socket[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ profile: { seed: 5 }, clock });
  database = await openDatabase({ dataDir: ':memory:' });
  store = createRunStore(database, { clock });
  await store.createRun({
    runId: RUN_ID,
    scenario: 'h',
    totalRounds: 1,
    machineVersion: AGENT_MACHINE_VERSION,
  });
  await store.commitRound({
    runId: RUN_ID,
    round: 1,
    turns: [turn('I1', 'analyst', 1)],
    states: [state('analyst', 1)],
  });
  supervisor = createSupervisor(
    {
      endpoints: [emulatorEndpoint(emulator, 'sonnet', 'anthropic', 'claude-sonnet-4-6')],
      chains: { main: ['sonnet'] },
    },
    { clock },
  );
  supervisor.spawnAgent({ name: 'analyst', chain: 'main', tier: 'analysis' });
  live = createLiveSource(supervisor, { clock, sampleIntervalMs: 0 });
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  live?.close();
  await supervisor?.stop();
  await database?.close();
  await emulator?.close();
});

/** One request with the headers a browser (or an attacker's page) would send. */
function get(
  port: number,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      // An SSE stream never ends: its first chunk is enough.
      res.on('data', (d: string) => {
        body += d;
        if (res.headers['content-type']?.startsWith('text/event-stream')) {
          res.destroy();
          resolve({ status: res.statusCode ?? 0, body });
        }
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function withViz<T>(
  options: Parameters<typeof startVizServer>[0],
  fn: (viz: VizServer) => Promise<T>,
): Promise<T> {
  const viz = await startVizServer({ port: 0, store, live, runId: RUN_ID, ...options });
  try {
    return await fn(viz);
  } finally {
    await viz.close();
  }
}

describe('the visualizer answers only 127.0.0.1 and localhost, from its own origin', () => {
  it.each([
    ['/', 'evil.example'],
    ['/api/runs', 'evil.example'],
    [`/api/runs/${RUN_ID}/turns`, 'rebind.attacker.test'],
    ['/api/live', 'evil.example'],
  ])('%s with Host %s (DNS rebinding): 403 and nothing of the run', async (path, host) =>
    withViz({}, async (viz) => {
      const res = await get(viz.port, path, { host: `${host}:${viz.port}` });
      expect(res.status).toBe(403);
      expect(res.body).toMatch(/the Host header is not 127\.0\.0\.1 or localhost/);
      expect(res.body).not.toContain(RUN_ID);
    }),
  );

  it('another Origin or a cross-site fetch is refused; the own origin, localhost and a plain request are served', async () =>
    withViz({}, async (viz) => {
      const own = `127.0.0.1:${viz.port}`;
      const refused = await get(viz.port, '/api/runs', { host: own, origin: 'http://evil.example' });
      expect(refused.status).toBe(403);
      expect(refused.body).not.toContain(RUN_ID);
      expect((await get(viz.port, '/api/runs', { host: own, 'sec-fetch-site': 'cross-site' })).status).toBe(
        403,
      );
      const ok = await get(viz.port, '/api/runs', { host: own, origin: `http://${own}` });
      expect(ok.status).toBe(200);
      expect(ok.body).toContain(RUN_ID);
      expect((await get(viz.port, '/api/runs', { host: `localhost:${viz.port}` })).status).toBe(200);
      expect((await get(viz.port, '/api/live', { host: own })).status).toBe(200);
    }));
});

describe('lookups by own names only', () => {
  it('?agent=__proto__ / constructor find no agent; a real agent is found', async () =>
    withViz({}, async (viz) => {
      const host = { host: `127.0.0.1:${viz.port}` };
      const base = `/api/runs/${RUN_ID}`;
      const analyst = JSON.parse((await get(viz.port, `${base}/snapshots?agent=analyst`, host)).body);
      expect(analyst.agent).toBe('analyst');
      for (const name of ['__proto__', 'constructor', 'hasOwnProperty', 'toString']) {
        const res = await get(viz.port, `${base}/snapshots?agent=${name}`, host);
        expect(res.status, name).toBe(200);
        expect(JSON.parse(res.body), name).toBeNull();
        expect(JSON.parse((await get(viz.port, `${base}/turns?agent=${name}`, host)).body), name).toEqual([]);
        expect((await get(viz.port, `/api/live/agents/${name}`, host)).status, name).toBe(404);
      }
    }));
});

/** Opens /api/live on a raw socket that never reads what comes back. */
function stalledReader(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(`GET /api/live HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
      socket.pause();
      resolve(socket);
    });
    sockets.push(socket);
    socket.on('error', () => {});
    socket.once('error', reject);
  });
}

const closed = (s: Socket) =>
  new Promise<void>((resolve) => (s.destroyed ? resolve() : s.once('close', () => resolve())));

describe('readers that do not read cannot make the run buffer without end', () => {
  it('at most maxLiveClients streams at once: one more gets 503; a freed place is taken again', async () =>
    withViz({ maxLiveClients: 3 }, async (viz) => {
      const held = await Promise.all([1, 2, 3].map(() => stalledReader(viz.port)));
      // Each held stream got its answer head: the server counts them.
      await new Promise((r) => setTimeout(r, 200));
      const fourth = await get(viz.port, '/api/live', { host: `127.0.0.1:${viz.port}` });
      expect(fourth.status).toBe(503);
      expect(fourth.body).toContain('at most 3 live streams at once');
      held[0]!.destroy();
      await closed(held[0]!);
      let again = 0;
      for (let i = 0; i < 50 && again !== 200; i++) {
        again = (await get(viz.port, '/api/live', { host: `127.0.0.1:${viz.port}` })).status;
        if (again !== 200) await new Promise((r) => setTimeout(r, 50));
      }
      expect(again).toBe(200);
    }));

  it('a stream whose reader lags by more than maxBufferedBytes is dropped', async () => {
    // Large events (4 KiB policy lines) are pushed until the server gives up: samples are deltas now, so
    // an idle runtime's samples are small and cannot fill a buffer themselves.
    const big = createSupervisor(
      {
        endpoints: [emulatorEndpoint(emulator, 'flash', 'gemini', 'gemini-2.5-flash')],
        chains: { main: ['flash'] },
      },
      { clock },
    );
    for (let i = 0; i < 300; i++) big.spawnAgent({ name: `agent-${i}`, chain: 'main', tier: 'analysis' });
    const source = createLiveSource(big, { clock, sampleIntervalMs: 0 });
    const viz = await startVizServer({ port: 0, live: source, maxBufferedBytes: 256 * 1024 });
    try {
      const socket = await stalledReader(viz.port);
      const line = {
        type: 'policy.log' as const,
        at: clock.now(),
        agent: 'agent-1',
        data: { message: 'x'.repeat(4096) },
      };
      const sampleBytes = JSON.stringify(line).length;
      let pushed = 0;
      // Bounded: 4,000 lines (16 MiB) are far more than kernel buffers and the allowance hold; it stops as
      // soon as the server has dropped the reader.
      for (; pushed < 4000 && viz.stats().droppedSlowClients === 0; pushed++) {
        source.publish(line);
        await new Promise((r) => setImmediate(r));
      }
      expect(viz.stats().droppedSlowClients).toBe(1);
      expect(viz.stats().liveClients).toBe(0);
      expect(pushed * sampleBytes).toBeGreaterThan(256 * 1024);
      // The reader, once it reads again, finds its stream ended by the server.
      socket.resume();
      await Promise.race([closed(socket), new Promise((r) => setTimeout(r, 10_000))]);
      expect(socket.destroyed).toBe(true);
    } finally {
      source.close();
      await viz.close();
      await big.stop();
    }
  }, 120_000);

  it('at most maxConnections connections are held; more are closed at once', async () =>
    withViz({ maxConnections: 2 }, async (viz) => {
      const a = await stalledReader(viz.port);
      const b = await stalledReader(viz.port);
      await new Promise((r) => setTimeout(r, 100));
      const c = connect(viz.port, '127.0.0.1');
      sockets.push(c);
      c.on('error', () => {});
      await Promise.race([closed(c), new Promise((r) => setTimeout(r, 5_000))]);
      expect(c.destroyed).toBe(true);
      expect(a.destroyed || b.destroyed).toBe(false);
    }));
});
