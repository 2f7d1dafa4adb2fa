import { connect, type Socket } from 'node:net';
import { Registry } from 'prom-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { type MetricsServer, startMetricsServer } from '../../src/observability/metrics-server.ts';
import { startVizServer, type VizServer } from '../../src/viz/viz-server.ts';

// Issue 42, "Servers that one client can't lock out": every local server answers only its own names
// (DNS rebinding), and a request with two Host headers gets 400 (RFC 9112 §3.2). Raw sockets, so the
// request head is exactly what is written.

let metrics: MetricsServer;
let viz: VizServer;
let emulator: Emulator;
const sockets: Socket[] = [];

/** Writes `head` on a fresh connection and resolves with the status code of the answer. */
function statusOf(port: number, head: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    sockets.push(socket);
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (s: string) => {
      text += s;
      const m = /^HTTP\/1\.1 (\d{3})/.exec(text);
      if (m && text.includes('\r\n\r\n')) {
        socket.destroy();
        resolve({ status: Number(m[1]), text });
      }
    });
    socket.on('error', reject);
    socket.on('close', () => reject(new Error(`closed without an answer: ${JSON.stringify(text)}`)));
    socket.write(head);
  });
}

const portOf = (url: string) => Number(new URL(url).port);

beforeAll(async () => {
  metrics = await startMetricsServer(new Registry());
  viz = await startVizServer({ port: 0 });
  emulator = await startEmulator({ profile: { acceptAnyKey: true } });
});

afterAll(async () => {
  for (const s of sockets) s.destroy();
  await metrics?.close();
  await viz?.close();
  await emulator?.close();
});

const servers = () => [
  { name: 'metrics', port: portOf(metrics.url), path: '/metrics' },
  { name: 'viz', port: viz.port, path: '/api/config' },
  { name: 'emulator control', port: portOf(emulator.controlURL), path: '/_emulator/stats' },
  {
    name: 'emulator control on a flavor port',
    port: portOf(emulator.baseURL('openai')),
    path: '/_emulator/stats',
  },
];

describe('every local server checks Host', () => {
  it('its own names are served (127.0.0.1 and localhost on its port)', async () => {
    for (const s of servers()) {
      for (const host of [`127.0.0.1:${s.port}`, `localhost:${s.port}`, `LOCALHOST:${s.port}`]) {
        const answer = await statusOf(
          s.port,
          `GET ${s.path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
        );
        expect(answer.status, `${s.name} with Host ${host}`).toBe(200);
      }
    }
  });

  it('a foreign Host (DNS rebinding) gets 403 and nothing of what is served', async () => {
    for (const s of servers()) {
      for (const host of [
        `evil.example:${s.port}`,
        `127.0.0.1:${s.port + 1}`,
        '127.0.0.1',
        `attacker.test`,
      ]) {
        const answer = await statusOf(
          s.port,
          `GET ${s.path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`,
        );
        expect(answer.status, `${s.name} with Host ${host}`).toBe(403);
        expect(answer.text).toMatch(/Host header is not 127\.0\.0\.1 or localhost/);
        expect(answer.text).not.toMatch(/totalCalls|# HELP|liveRunId/);
      }
    }
  });

  it('two Host headers get 400, even when both are its own', async () => {
    for (const s of servers()) {
      for (const [a, b] of [
        [`127.0.0.1:${s.port}`, 'evil.example'],
        ['evil.example', `127.0.0.1:${s.port}`],
        [`127.0.0.1:${s.port}`, `127.0.0.1:${s.port}`],
      ]) {
        const answer = await statusOf(
          s.port,
          `GET ${s.path} HTTP/1.1\r\nHost: ${a}\r\nHost: ${b}\r\nConnection: close\r\n\r\n`,
        );
        expect(answer.status, `${s.name} with Host ${a} and ${b}`).toBe(400);
        expect(answer.text).not.toMatch(/totalCalls|# HELP|liveRunId/);
      }
    }
  });

  it("the emulator's provider routes still answer an SDK's own Host", async () => {
    const base = new URL(emulator.baseURL('openai'));
    const body = JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] });
    const answer = await statusOf(
      Number(base.port),
      `POST ${base.pathname.replace(/\/$/, '')}/chat/completions HTTP/1.1\r\nHost: ${base.host}\r\nAuthorization: Bearer sk-any\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
    expect(answer.status).toBe(200);
  });
});
