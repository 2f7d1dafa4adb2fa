import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllowedHosts, runEmulatorCommand } from '../../src/cli/commands/emulator-command.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import { EMULATOR_FLAVORS } from '../../src/emulator/emulator-types.ts';
import { isConfigError } from '../../src/core/errors/config-error.ts';

// Issue 42, "Servers that one client can't lock out", for the emulator's provider listeners (they were open to
// any Host): every listener answers only its own names (DNS rebinding), two Host headers get 400 (RFC 9112 §3.2),
// and a connection that never finishes its request head is cut while new clients are still answered. Bound to
// 0.0.0.0 for other containers, the names the user allows are answered too. Raw sockets: the head is exactly what
// is written.

let emulator: Emulator;
const sockets: Socket[] = [];

beforeAll(async () => {
  emulator = await startEmulator({ profile: { acceptAnyKey: true } });
});
afterAll(async () => {
  for (const s of sockets) s.destroy();
  await emulator?.close();
});

const BODY = JSON.stringify({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] });

/** Writes a chat request with `hosts` as its Host headers to `base` on a fresh connection; resolves with the answer. */
function ask(base: string, hosts: readonly string[]): Promise<{ status: number; text: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), '127.0.0.1');
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
    socket.write(
      `POST ${url.pathname.replace(/\/$/, '')}/chat/completions HTTP/1.1\r\n${hosts.map((h) => `Host: ${h}\r\n`).join('')}Authorization: Bearer sk-guard-0001\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(BODY)}\r\nConnection: close\r\n\r\n${BODY}`,
    );
  });
}

const portOf = (url: string) => Number(new URL(url).port);

describe("the emulator's provider listeners guard their ports as every local server does", () => {
  it('its own names are served on every OpenAI-shaped flavor', async () => {
    for (const flavor of ['openai', 'vllm', 'ollama'] as const) {
      const base = emulator.baseURL(flavor);
      for (const host of [`127.0.0.1:${portOf(base)}`, `localhost:${portOf(base)}`])
        expect((await ask(base, [host])).status, `${flavor} ${host}`).toBe(200);
    }
  });

  it('a foreign Host gets 403 and is not served (no call counted); two Host headers get 400', async () => {
    const before = emulator.stats().totalCalls;
    for (const flavor of EMULATOR_FLAVORS) {
      const base = emulator.baseURL(flavor);
      const port = portOf(base);
      for (const host of [`evil.example:${port}`, `127.0.0.1:${port + 100}`, 'attacker.test']) {
        const answer = await ask(base, [host]);
        expect(answer.status, `${flavor} ${host}`).toBe(403);
        expect(answer.text).toMatch(/Host header is not 127\.0\.0\.1 or localhost/);
        expect(answer.text).not.toMatch(/chat\.completion/);
      }
      for (const pair of [
        [`127.0.0.1:${port}`, 'evil.example'],
        [`127.0.0.1:${port}`, `127.0.0.1:${port}`],
      ])
        expect((await ask(base, pair)).status, `${flavor} ${pair.join(' + ')}`).toBe(400);
    }
    expect(emulator.stats().totalCalls).toBe(before);
  });

  it('a connection that never finishes its request head is cut while a new client is still answered', async () => {
    const base = emulator.baseURL('openai');
    const port = portOf(base);
    const socket = connect(port, '127.0.0.1');
    sockets.push(socket);
    socket.on('error', () => {});
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    const closed = new Promise<boolean>((resolve) => socket.once('close', () => resolve(true)));
    socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Slow: a`);
    const trickle = setInterval(() => !socket.destroyed && socket.write('a'), 500);
    try {
      // While the slow head is held, a new client is served.
      expect(socket.destroyed).toBe(false);
      expect((await ask(base, [`127.0.0.1:${port}`])).status).toBe(200);
      // A hang guard far above the 5 s deadline.
      const cut = await Promise.race([
        closed,
        new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 60_000).unref()),
      ]);
      expect(cut).toBe(true);
    } finally {
      clearInterval(trickle);
    }
    expect((await ask(base, [`127.0.0.1:${port}`])).status).toBe(200);
  }, 90_000);
});

describe('an emulator bound to 0.0.0.0 answers the names the user allows', () => {
  it('an allowed host (any port, as a published container port) and the loopback names are served; others 403', async () => {
    const wide = await startEmulator({
      profile: { acceptAnyKey: true },
      host: '0.0.0.0',
      allowedHosts: ['llm-emulator', 'Emulator.Internal'],
    });
    try {
      const base = wide.baseURL('openai');
      expect(new URL(base).hostname).toBe('127.0.0.1');
      const port = portOf(base);
      for (const host of [
        `llm-emulator:${port}`,
        'llm-emulator:9701',
        'LLM-EMULATOR',
        `emulator.internal:${port}`,
        `127.0.0.1:${port}`,
        `localhost:${port}`,
      ])
        expect((await ask(base, [host])).status, host).toBe(200);
      for (const host of [`evil.example:${port}`, `llm-emulator.evil.example:${port}`, `emulator:${port}`]) {
        const answer = await ask(base, [host]);
        expect(answer.status, host).toBe(403);
        expect(answer.text).toMatch(/add the name to allowedHosts/);
      }
      expect((await ask(base, [`llm-emulator:${port}`, 'evil.example'])).status).toBe(400);
      // The control routes follow the same names.
      const control = await ask(wide.controlURL, [`llm-emulator:${portOf(wide.controlURL)}`]);
      expect(control.status).toBe(404);
      expect(wide.stats().totalCalls).toBe(6);
    } finally {
      await wide.close();
    }
  });

  it('allowed hosts on a loopback bind, or a malformed one, are refused at start naming the option', async () => {
    for (const options of [
      { allowedHosts: ['llm-emulator'] },
      { host: '0.0.0.0', allowedHosts: ['llm-emulator:8701'] },
      { host: '0.0.0.0', allowedHosts: ['a b'] },
      { host: '' },
    ]) {
      const e = await startEmulator(options).then(
        (emu) => emu.close().then(() => undefined),
        (err: unknown) => err,
      );
      expect(isConfigError(e), JSON.stringify(options)).toBe(true);
      expect((e as Error).message).toMatch(/emulator options at (allowedHosts|host)/);
    }
  });

  it('`breakwater emulator --host 0.0.0.0 --allowed-hosts …` serves the allowed names and says so', async () => {
    expect(parseAllowedHosts('llm-emulator, emulator.internal,')).toEqual([
      'llm-emulator',
      'emulator.internal',
    ]);
    const stop = new AbortController();
    const lines: string[] = [];
    const done = runEmulatorCommand({
      port: 0,
      host: '0.0.0.0',
      allowedHosts: ['llm-emulator'],
      signal: stop.signal,
      print: (line) => lines.push(line),
    });
    try {
      await expect.poll(() => lines.some((l) => /^openai\s/.test(l)), { timeout: 10_000 }).toBe(true);
      expect(lines[0]).toMatch(/^breakwater emulator on 0\.0\.0\.0 .*also answers llm-emulator/);
      const base = lines.find((l) => /^openai\s/.test(l))!.split(/\s+/)[1]!;
      expect((await ask(base, [`llm-emulator:${portOf(base)}`])).status).toBe(200);
      expect((await ask(base, [`evil.example:${portOf(base)}`])).status).toBe(403);
    } finally {
      stop.abort('test');
      await done;
    }
  });
});
