import type http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createCallCredential } from '../../src/engines/call-credential.ts';
import { credentialFetch } from '../../src/engines/credential-fetch.ts';
import { type RawFixtureServer, startRawFixture } from './raw-fixture-server.ts';

// The body `credentialFetch` hands an SDK is a web stream fed straight from Node's response: these pin what the
// platform fetch does with it (bytes in order, a cut body, a cancelled body, an abort mid-body).
describe('credentialFetch response body', () => {
  let fx: RawFixtureServer;
  const credential = createCallCredential('sk-credential-fetch-test-0001');
  beforeAll(async () => {
    fx = await startRawFixture();
    fx.reply(() => ({ manual: true }));
  });
  afterAll(async () => {
    credential.dispose();
    await fx.close();
  });

  const post = (signal?: AbortSignal) =>
    credentialFetch(`${fx.url}/x`, {
      method: 'POST',
      body: '{}',
      headers: { authorization: `Bearer ${credential.marker}` },
      ...(signal ? { signal } : {}),
    });
  const closed = (res: http.ServerResponse) =>
    new Promise<void>((resolve) => {
      if (res.socket?.destroyed) resolve();
      else res.socket?.once('close', () => resolve());
    });

  it('delivers every chunk, in order, as bytes, and ends; the key went out in place of its marker', async () => {
    const pending = post();
    const res = await fx.nextManual();
    expect(fx.seen.at(-1)?.headers.authorization).toBe('Bearer sk-credential-fetch-test-0001');
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: 1\n\n');
    const response = await pending;
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    const first = await reader.read();
    expect(first.value).toBeInstanceOf(Uint8Array);
    let text = decoder.decode(first.value, { stream: true });
    for (let i = 2; i <= 40; i++) res.write(`data: ${i}\n\n`);
    res.end();
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += decoder.decode(value, { stream: true });
    }
    expect(text).toBe(Array.from({ length: 40 }, (_, i) => `data: ${i + 1}\n\n`).join(''));
  });

  it("errors a body cut mid-way as the platform fetch does: TypeError('terminated')", async () => {
    const pending = post();
    const res = await fx.nextManual();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: 1\n\n');
    const response = await pending;
    const reader = response.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('data: 1\n\n');
    res.socket?.destroy();
    const err = await reader.read().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(TypeError);
    expect((err as Error).message).toBe('terminated');
  });

  it('cancelling the body closes the connection (the server sees it go)', async () => {
    const pending = post();
    const res = await fx.nextManual();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: 1\n\n');
    const response = await pending;
    const gone = closed(res);
    await response.body!.cancel();
    await gone;
    expect(res.socket?.destroyed ?? true).toBe(true);
  });

  it("an abort mid-body errors the read with the signal's reason and closes the connection", async () => {
    const controller = new AbortController();
    const pending = post(controller.signal);
    const res = await fx.nextManual();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: 1\n\n');
    const response = await pending;
    const reader = response.body!.getReader();
    await reader.read();
    const gone = closed(res);
    const reason = new Error('caller left');
    controller.abort(reason);
    await expect(reader.read()).rejects.toBe(reason);
    await gone;
  });
});
