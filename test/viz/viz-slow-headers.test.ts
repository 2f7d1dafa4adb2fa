import { connect, type Socket } from 'node:net';
import { Registry } from 'prom-client';
import { afterEach, describe, expect, it } from 'vitest';
import { startMetricsServer } from '../../src/observability/metrics-server.ts';
import { startVizServer } from '../../src/viz/viz-server.ts';

// Issue 42, "Servers that one client can't lock out": 64 connections that send a request head one byte at
// a time used to fill `breakwater viz`'s connection cap, and every legitimate request got ECONNRESET for
// about a minute. Now a full server makes room by closing its oldest connection that is not serving a
// request, and a connection without a complete head is cut after `headersTimeoutMs` (3 s by default).
// The waits below are event waits; their bounds are hang guards, far above the deadline.

const open: Socket[] = [];
const closers: Array<() => Promise<void>> = [];

afterEach(async () => {
  for (const s of open.splice(0)) s.destroy();
  for (const close of closers.splice(0)) await close();
});

/** A client that opens a connection and sends a request head one byte a second, never finishing it. */
function slowClient(port: number): Promise<{ socket: Socket; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    open.push(socket);
    const head = `GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Slow: `;
    const trickle = setInterval(() => {
      if (!socket.destroyed) socket.write('a');
    }, 1_000);
    const closed = new Promise<void>((done) =>
      socket.once('close', () => {
        clearInterval(trickle);
        done();
      }),
    );
    socket.on('error', () => {});
    socket.once('connect', () => {
      socket.write(head);
      resolve({ socket, closed });
    });
    socket.once('error', reject);
  });
}

const guard = (ms: number, what: string) =>
  new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`hang: ${what}`)), ms).unref());

describe('slow request heads', () => {
  it('64 slow clients on the visualizer: legitimate requests are still served, the slow ones are cut', async () => {
    const viz = await startVizServer({ port: 0 });
    closers.push(() => viz.close());
    const slow = await Promise.all(Array.from({ length: 64 }, () => slowClient(viz.port)));
    // Let the server take every one of them before the legitimate clients come.
    await new Promise((r) => setTimeout(r, 200));
    for (let i = 0; i < 5; i++) {
      const res = await fetch(`${viz.url}/api/config`);
      expect(res.status).toBe(200);
      expect(await res.json()).toHaveProperty('live');
    }
    // Every slow client is gone (evicted to make room, or cut at its deadline), without any help.
    await Promise.race([Promise.all(slow.map((s) => s.closed)), guard(30_000, 'slow clients never cut')]);
    expect(slow.every((s) => s.socket.destroyed)).toBe(true);
    expect((await fetch(`${viz.url}/api/config`)).status).toBe(200);
  }, 60_000);

  it('a lone slow client is cut at its deadline though nobody else needs the room', async () => {
    const viz = await startVizServer({ port: 0, headersTimeoutMs: 1_000 });
    closers.push(() => viz.close());
    const { closed, socket } = await slowClient(viz.port);
    await Promise.race([closed, guard(15_000, 'the slow client was never cut')]);
    expect(socket.destroyed).toBe(true);
  }, 30_000);

  it('/metrics: slow clients filling its cap do not lock a scraper out', async () => {
    const server = await startMetricsServer(new Registry(), { maxConnections: 4 });
    closers.push(() => server.close());
    const port = Number(new URL(server.url).port);
    const slow = await Promise.all(Array.from({ length: 4 }, () => slowClient(port)));
    await new Promise((r) => setTimeout(r, 200));
    const res = await fetch(server.url);
    expect(res.status).toBe(200);
    await Promise.race([Promise.all(slow.map((s) => s.closed)), guard(30_000, 'slow clients never cut')]);
  }, 60_000);
});
