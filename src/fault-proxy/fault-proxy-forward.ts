import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Clock } from '../clock/clock.ts';
import { parkOnClock } from '../clock/virtual-clock.ts';
import type { EmulatorFlavor, FaultRule } from '../emulator/emulator-types.ts';
import type { WireModule } from '../emulator/wire-module.ts';
import { proxyWireContext } from './fault-proxy-wire.ts';

/** What the proxy did so far, counted as it goes (`FaultProxy.stats()` copies it). */
export interface ProxyCounts {
  forwarded: number;
  readonly faulted: Record<string, number>;
}

/** What forwarding a call needs of its proxy, every option resolved. */
export interface ForwardParts {
  /** The endpoint's real base URL; calls go to its origin with their own path. */
  readonly upstream: URL;
  readonly flavor: EmulatorFlavor;
  readonly wire: WireModule;
  readonly clock: Clock;
  /** Aborts on the proxy's close(): ends upstream fetches and held requests. */
  readonly closing: AbortSignal;
  readonly counts: ProxyCounts;
}

/** SSE events a `stream_error` rule lets through before its error event (as the emulator does). */
const STREAM_EVENTS_BEFORE_ERROR = 3;

/** Hop-by-hop and framing headers: the proxy's own connection decides them. */
const HOP = new Set([
  'host',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'content-length',
  'content-encoding',
  'accept-encoding',
  'proxy-connection',
  'upgrade',
  'te',
  'trailer',
]);

/** Holds a request until the client (or close()) gives up; a wait for the clock's deadline. */
export const holdUntilGone = (res: ServerResponse, clock: Clock, closing: AbortSignal) =>
  new Promise<void>((resolve) => {
    const unpark = parkOnClock(clock);
    // Each listener is taken off when either fires: the proxy's one close signal outlives every held request.
    const done = () => {
      res.off('close', done);
      closing.removeEventListener('abort', done);
      unpark();
      resolve();
    };
    if (res.destroyed || closing.aborted) return done();
    res.once('close', done);
    closing.addEventListener('abort', done, { once: true });
  });

/**
 * Passes a call to the real server and its answer back, streaming included; `cut` (a stall or a stream error)
 * lets the answer begin, then acts itself out.
 */
export async function forward(
  parts: ForwardParts,
  req: IncomingMessage,
  res: ServerResponse,
  body: Buffer,
  cut?: FaultRule,
): Promise<void> {
  const { upstream, wire, clock, closing } = parts;
  parts.counts.forwarded++;
  const upstreamAbort = new AbortController();
  res.on('close', () => upstreamAbort.abort());
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || HOP.has(name)) continue;
    headers.set(name, Array.isArray(value) ? value.join(', ') : value);
  }
  headers.set('accept-encoding', 'identity');
  let response: Response;
  try {
    response = await fetch(new URL(req.url ?? '/', upstream.origin), {
      method: req.method ?? 'POST',
      headers,
      ...(body.length > 0 && req.method !== 'GET' && req.method !== 'HEAD'
        ? { body: new Uint8Array(body) }
        : {}),
      signal: AbortSignal.any([upstreamAbort.signal, closing]),
    });
  } catch {
    // The real server is unreachable: so is the endpoint, as the client would have seen directly.
    req.socket.destroy();
    return;
  }
  const out: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    if (!HOP.has(name)) out[name] = value;
  });
  res.writeHead(response.status, out);
  const ctx = proxyWireContext(parts.flavor, clock);
  try {
    const reader = response.body?.getReader();
    if (cut?.kind === 'stream_error') {
      // Pass the first events whole (however the bytes were chunked), then the provider's error event.
      const decoder = new TextDecoder();
      let pending = '';
      let passed = 0;
      for (
        let r = await reader?.read();
        r && !r.done && passed < STREAM_EVENTS_BEFORE_ERROR;
        r = await reader?.read()
      ) {
        pending += decoder.decode(r.value, { stream: true });
        for (
          let at = pending.indexOf('\n\n');
          at >= 0 && passed < STREAM_EVENTS_BEFORE_ERROR;
          at = pending.indexOf('\n\n')
        ) {
          res.write(pending.slice(0, at + 2));
          pending = pending.slice(at + 2);
          passed++;
        }
      }
      upstreamAbort.abort();
      res.end(wire.streamError(ctx, cut.message));
      return;
    }
    for (let r = await reader?.read(); r && !r.done; r = await reader?.read()) {
      if (cut?.kind === 'stall_after_headers') {
        // A first slice of the body, as the emulator's stall sends, then nothing.
        res.write(r.value.subarray(0, Math.max(1, Math.floor(r.value.length / 3))));
        upstreamAbort.abort();
        await holdUntilGone(res, clock, closing);
        res.destroy();
        return;
      }
      res.write(r.value);
    }
    res.end();
  } catch {
    res.destroy();
  }
}
