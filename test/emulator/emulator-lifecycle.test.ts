import { createServer } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { EMULATOR_FLAVORS } from '../../src/emulator/emulator-types.ts';
import { startEmulator } from '../../src/emulator/emulator-server.ts';
import { waitFor } from '../support/wait-for.ts';
import { anthropicClient, rejectionOf } from './sdk-clients.ts';

/** A base port whose next six neighbours are free right now. */
async function freeBlock(): Promise<number> {
  const probe = (port: number) =>
    new Promise<boolean>((resolve) => {
      const s = createServer();
      s.once('error', () => resolve(false));
      s.listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
  for (let attempt = 0; attempt < 20; attempt++) {
    const base = 20_000 + Math.floor(Math.random() * 20_000);
    const ok = await Promise.all([0, 1, 2, 3, 4, 5, 6].map((i) => probe(base + i)));
    if (ok.every(Boolean)) return base;
  }
  throw new Error('no free port block');
}

describe('lifecycle', () => {
  it('a fixed port puts control on it and the flavors on port+1 … port+6, in flavor order', async () => {
    const port = await freeBlock();
    const emu = await startEmulator({ port });
    try {
      expect(emu.controlURL).toBe(`http://127.0.0.1:${port}`);
      expect(EMULATOR_FLAVORS.map((f) => new URL(emu.baseURL(f)).port)).toEqual(
        [1, 2, 3, 4, 5, 6].map((i) => String(port + i)),
      );
      expect(emu.baseURL('gemini')).toBe(`http://127.0.0.1:${port + 3}`);
    } finally {
      await emu.close();
    }
  });

  it('close() destroys held sockets (hang and stall) and frees every port', async () => {
    const emu = await startEmulator({ clock: createManualClock(0) });
    emu.addFault({ kind: 'hang_before_headers', match: { flavor: 'anthropic' } });
    emu.addFault({ kind: 'stall_after_headers', match: { flavor: 'openai' } });
    const hung = rejectionOf(
      anthropicClient(emu).messages.create({
        model: 'm',
        max_tokens: 8,
        messages: [{ role: 'user', content: 'x' }],
      }),
    );
    const stalled = fetch(`${emu.baseURL('openai')}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer sk-x' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'x' }] }),
    }).then((r) => r.text());
    await waitFor(() => emu.stats().held === 2, 'both requests to be held (hang and stall)');
    await emu.close();
    expect(await hung).toBeDefined();
    await expect(stalled).rejects.toThrow();
    expect(emu.stats().byStatus).toEqual({ hang: 1, stall: 1 });
    await expect(fetch(`${emu.controlURL}/_emulator/stats`)).rejects.toThrow();
  });

  it('Gemini also accepts the key as ?key=, and the logger never sees a plaintext key', async () => {
    const lines: string[] = [];
    const pino = (await import('pino')).default;
    const logger = pino({ level: 'debug' }, { write: (l: string) => lines.push(l) });
    const key = 'AIzaSyPlaintextKey000000000001';
    const emu = await startEmulator({ logger, profile: { keys: [{ alias: 'gem', key }] } });
    try {
      const res = await fetch(
        `${emu.baseURL('gemini')}/v1beta/models/gemini-2.5-flash:generateContent?key=${key}`,
        {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
        },
      );
      expect(res.status).toBe(200);
      expect(emu.stats().byKey).toEqual({ gem: 1 });
      expect(lines.length).toBeGreaterThan(0);
      expect(lines.join('\n')).not.toContain(key);
    } finally {
      await emu.close();
    }
  });
});
