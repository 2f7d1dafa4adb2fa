import type http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { createCallCredential } from '../../src/engines/call-credential.ts';
import {
  beginTimedCall,
  DeadlineError,
  endTimedCall,
  runTimedCall,
  timedFetch,
} from '../../src/engines/timed-fetch.ts';
import { type RawFixtureServer, startRawFixture } from './raw-fixture-server.ts';

// The deadlines run on the injected clock: these tests move a manual clock instead of waiting.
describe('timedFetch', () => {
  let fx: RawFixtureServer;
  const credential = createCallCredential('sk-timed-fetch-test-0001');
  beforeAll(async () => {
    fx = await startRawFixture();
    fx.reply(() => ({ manual: true }));
  });
  afterAll(async () => {
    credential.dispose();
    await fx.close();
  });

  const post = () => timedFetch(`${fx.url}/x`, { method: 'POST', body: '{}' });

  it('fails with a headers DeadlineError when no headers arrive before the deadline', async () => {
    const clock = createManualClock(1_000);
    const call = beginTimedCall(clock, 5_000, 2_000, undefined);
    const pending = runTimedCall(call, post);
    const res = await fx.nextManual();
    clock.advance(4_999);
    expect(call.timedOut).toBeUndefined();
    clock.advance(1);
    await expect(pending).rejects.toBeInstanceOf(DeadlineError);
    await expect(pending).rejects.toMatchObject({ phase: 'headers', name: 'AbortError' });
    expect(call.timedOut).toBe('headers');
    endTimedCall(call);
    res.destroy();
  });

  // A process starved of CPU (a loaded machine) wakes with its deadline timer due and the answer already in its
  // socket: timers run before the poll phase reads it, so the call was cut though it had been answered in time.
  it('a deadline due when the headers are already in the socket, unread, lets them be read first', async () => {
    const clock = createManualClock(1_000);
    const call = beginTimedCall(clock, 5_000, 2_000, undefined);
    const pending = runTimedCall(call, post);
    const res = await fx.nextManual();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"a":1');
    // In the same tick, before this process reads its socket: the deadline comes due.
    clock.advance(5_000);
    const response = await pending;
    expect(call.timedOut).toBeUndefined();
    expect(response.status).toBe(200);
    res.end('}');
    expect(await response.text()).toBe('{"a":1}');
    endTimedCall(call);
  });

  it('an idle deadline due when body bytes are already in the socket, unread, lets them be read first', async () => {
    const clock = createManualClock(0);
    const call = beginTimedCall(clock, 5_000, 1_000, undefined);
    const pending = runTimedCall(call, post);
    const res = await fx.nextManual();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"a":');
    const response = await pending;
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value);
    const next = reader.read();
    res.end('1}');
    clock.advance(1_000);
    for (let r = await next; !r.done; r = await reader.read()) text += decoder.decode(r.value);
    expect(call.timedOut).toBeUndefined();
    expect(text).toBe('{"a":1}');
    endTimedCall(call);
  });

  it('re-arms the idle deadline on every body chunk, so a slow but moving body completes', async () => {
    const clock = createManualClock(0);
    const call = beginTimedCall(clock, 5_000, 1_000, undefined);
    const pending = runTimedCall(call, post);
    const res = await fx.nextManual();
    res.writeHead(200, { 'content-type': 'application/json', 'x-marker': 'yes' });
    res.write('{"a":');
    const response = await pending;
    expect(call.status).toBe(200);
    expect(call.headers?.get('x-marker')).toBe('yes');
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let text = decoder.decode((await reader.read()).value);
    // Four gaps of 900 ms: 3.6 s in total, far past one idle period, yet never 1 s of silence.
    for (const piece of ['1', ',"b"', ':2', '}']) {
      clock.advance(900);
      res.write(piece);
      text += decoder.decode((await reader.read()).value);
    }
    res.end();
    expect((await reader.read()).done).toBe(true);
    expect(JSON.parse(text)).toEqual({ a: 1, b: 2 });
    expect(call.timedOut).toBeUndefined();
    endTimedCall(call);
    expect(clock.pending()).toBe(0);
  });

  // genai reads a body with getReader(); openai and @anthropic-ai/sdk iterate it. With a key the body comes from
  // credentialFetch, which stamps each chunk as it arrives; without one from the platform fetch, stamped per read.
  it.each([
    { how: 'getReader', keyed: false },
    { how: 'async iteration', keyed: false },
    { how: 'getReader', keyed: true },
    { how: 'async iteration', keyed: true },
  ] as const)(
    'a streamed body read by $how (key: $keyed): any bytes (pings, SSE comments) re-arm the idle deadline, not only events an SDK yields',
    async ({ how, keyed }) => {
      const clock = createManualClock(0);
      const call = beginTimedCall(clock, 5_000, 1_000, undefined, Date.now, keyed ? credential : undefined);
      call.streamed = true;
      const pending = runTimedCall(call, post);
      const res = await fx.nextManual();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('event: message_start\ndata: {}\n\n');
      const body = (await pending).body!;
      const read: () => Promise<IteratorResult<Uint8Array>> =
        how === 'getReader'
          ? (() => {
              const reader = body.getReader();
              return () => reader.read() as Promise<IteratorResult<Uint8Array>>;
            })()
          : (() => {
              const it = (body as unknown as AsyncIterable<Uint8Array>)[Symbol.asyncIterator]();
              return () => it.next();
            })();
      const decoder = new TextDecoder();
      let text = decoder.decode((await read()).value);
      // Pings 900 ms apart for 3.6 s: never 1 s of silence on the wire, though no content comes.
      for (const ping of [
        'event: ping\ndata: {"type":"ping"}\n\n',
        ': keep-alive\n\n',
        'event: ping\ndata: {}\n\n',
      ]) {
        clock.advance(900);
        res.write(ping);
        text += decoder.decode((await read()).value);
      }
      clock.advance(900);
      res.end('event: message_stop\ndata: {}\n\n');
      for (let r = await read(); !r.done; r = await read()) text += decoder.decode(r.value);
      expect(text.endsWith('event: message_stop\ndata: {}\n\n')).toBe(true);
      expect(call.timedOut).toBeUndefined();
      endTimedCall(call);
      expect(clock.pending()).toBe(0);
    },
  );

  it('a streamed body with a key that stalls between chunks fails the read with an idle DeadlineError', async () => {
    const clock = createManualClock(0);
    const call = beginTimedCall(clock, 5_000, 1_000, undefined, Date.now, credential);
    call.streamed = true;
    const pending = runTimedCall(call, post);
    const res = await fx.nextManual();
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write('data: 1\n\n');
    const reader = (await pending).body!.getReader();
    await reader.read();
    clock.advance(600);
    res.write('data: 2\n\n');
    await reader.read();
    // 999 ms after the second chunk (1,599 after the first): still alive; the deadline counts from the last chunk.
    clock.advance(999);
    expect(call.timedOut).toBeUndefined();
    const next = reader.read();
    clock.advance(1);
    await expect(next).rejects.toMatchObject({ phase: 'idle' });
    expect(call.timedOut).toBe('idle');
    endTimedCall(call);
    res.destroy();
  });

  it('fails the body read with an idle DeadlineError when the body stalls after headers', async () => {
    const clock = createManualClock(0);
    const call = beginTimedCall(clock, 5_000, 1_000, undefined);
    const pending = runTimedCall(call, post);
    const res = await fx.nextManual();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.write('{"partial":');
    const response = await pending;
    const reader = response.body!.getReader();
    await reader.read();
    clock.advance(999);
    expect(call.timedOut).toBeUndefined();
    const next = reader.read();
    clock.advance(1);
    await expect(next).rejects.toMatchObject({ phase: 'idle' });
    expect(call.timedOut).toBe('idle');
    endTimedCall(call);
    res.destroy();
  });

  it('captures status, headers and the raw body text of an error response, and still hands it to the reader', async () => {
    const clock = createManualClock(0);
    const call = beginTimedCall(clock, 5_000, 1_000, undefined);
    const pending = runTimedCall(call, post);
    const res: http.ServerResponse = await fx.nextManual();
    const raw =
      '[{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}]';
    res.writeHead(429, { 'content-type': 'application/json', 'retry-after': '7' });
    res.end(raw);
    const response = await pending;
    expect(response.status).toBe(429);
    expect(await response.text()).toBe(raw);
    expect(call.bodyText).toBe(raw);
    expect(call.headers?.get('retry-after')).toBe('7');
    endTimedCall(call);
  });

  it("aborts the request when the caller's signal fires, without marking a deadline", async () => {
    const clock = createManualClock(0);
    const caller = new AbortController();
    const call = beginTimedCall(clock, 5_000, 1_000, caller.signal);
    const pending = runTimedCall(call, post);
    const res = await fx.nextManual();
    caller.abort();
    await expect(pending).rejects.toMatchObject({ name: 'AbortError' });
    expect(call.timedOut).toBeUndefined();
    endTimedCall(call);
    expect(clock.pending()).toBe(0);
    res.destroy();
  });

  it('is plain fetch outside a timed call', async () => {
    fx.reply(() => ({ status: 200, body: { ok: true } }));
    const response = await timedFetch(`${fx.url}/plain`, { method: 'POST', body: '{}' });
    expect(await response.json()).toEqual({ ok: true });
    fx.reply(() => ({ manual: true }));
  });
});
