import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type FaultProxy, startFaultProxy } from '../../src/fault-proxy/fault-proxy.ts';
import { okReply } from '../support/reset-header-forms.ts';
import { startWireFixtureServer, type WireFixtureServer } from '../support/wire-fixture-server.ts';

// Issue 42, "Servers that one client can't lock out", for the fault proxy (it forwards with the real endpoint's key):
// it answers only its own names (DNS rebinding), two Host headers get 400, and a connection that never finishes its
// request head is cut, as the visualizer and /metrics do. Raw sockets: the request head is exactly what is written.

let upstream: WireFixtureServer;
let proxy: FaultProxy;
let port: number;
const sockets: Socket[] = [];

beforeAll(async () => {
  upstream = await startWireFixtureServer({ ok: okReply('openai') });
  proxy = await startFaultProxy({
    upstream: upstream.url('ok'),
    endpoint: { id: 'e', provider: 'openai' },
  });
  port = Number(new URL(proxy.baseURL).port);
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await proxy?.close();
  await upstream?.close();
});

const BODY = JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] });

/** Writes `hosts` as the Host headers of a chat request on a fresh connection; resolves with the answer. */
function ask(hosts: readonly string[]): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    sockets.push(socket);
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (s: string) => (text += s));
    socket.on('error', reject);
    socket.on('close', () => {
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (m) resolve({ status: Number(m[1]), text });
      else reject(new Error(`closed without an answer: ${JSON.stringify(text)}`));
    });
    const path = `${new URL(proxy.baseURL).pathname.replace(/\/$/, '')}/chat/completions`;
    socket.write(
      `POST ${path} HTTP/1.1\r\n${hosts.map((h) => `Host: ${h}\r\n`).join('')}Authorization: Bearer sk-guard-0001\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(BODY)}\r\nConnection: close\r\n\r\n${BODY}`,
    );
  });
}

describe('the fault proxy guards its port as every local server does', () => {
  it('its own names are forwarded', async () => {
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`])
      expect((await ask([host])).status, host).toBe(200);
  });

  it('a foreign Host gets 403 and is not forwarded; two Host headers get 400', async () => {
    const before = proxy.stats().forwarded;
    for (const host of [`evil.example:${port}`, `127.0.0.1:${port + 1}`, 'attacker.test']) {
      const answer = await ask([host]);
      expect(answer.status, host).toBe(403);
      expect(answer.text).toMatch(/Host header is not 127\.0\.0\.1 or localhost/);
    }
    for (const pair of [
      [`127.0.0.1:${port}`, 'evil.example'],
      [`127.0.0.1:${port}`, `127.0.0.1:${port}`],
    ])
      expect((await ask(pair)).status, pair.join(' + ')).toBe(400);
    expect(proxy.stats().forwarded).toBe(before);
  });

  it('a connection that never finishes its request head is cut (a hang guard far above the 3 s deadline)', async () => {
    const socket = connect(port, '127.0.0.1');
    sockets.push(socket);
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(`GET / HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Slow: a`);
    const trickle = setInterval(() => !socket.destroyed && socket.write('a'), 500);
    const closed = await Promise.race([
      new Promise<boolean>((resolve) => socket.once('close', () => resolve(true))),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 60_000).unref()),
    ]);
    clearInterval(trickle);
    expect(closed).toBe(true);
    // The proxy still serves a legitimate client afterwards.
    expect((await ask([`127.0.0.1:${port}`])).status).toBe(200);
  }, 90_000);
});
