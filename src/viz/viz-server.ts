import { type IncomingMessage, type ServerResponse, createServer } from 'node:http';
import { guardConnections } from '../http/connection-guard.ts';
import { checkLocalHost, localHosts } from '../http/local-host-check.ts';
import type { AddressInfo } from 'node:net';
import { constants as zlibConstants, createGzip, type Gzip } from 'node:zlib';
import { loadRunReport } from '../report/load-run-report.ts';
import { scrubValue } from '../redact/secret-scrubber.ts';
import type { RunStore } from '../store/run-store.ts';
import { isRunNotFoundError } from '../store/store-errors.ts';
import { isSnapshotRestoreError } from '../store/snapshot-restore-error.ts';
import { type VizLiveSource, turnFromRecord } from './live-source.ts';
import { pageAsset } from './page-assets.ts';
import { machineStatechart } from './statechart-graph.ts';
import type { VizEvent } from './viz-state-types.ts';

/** Options of {@link startVizServer}. */
export interface VizServerOptions {
  /** Port on 127.0.0.1 (never another interface). 0 = a free port chosen by the OS. Default 0. */
  readonly port?: number;
  /** The live feed (`createLiveSource`): served as SSE on `/api/live`. Default none (replay only). */
  readonly live?: VizLiveSource;
  /** The durable store: serves the replay APIs (`/api/runs…`). Default none (live only). */
  readonly store?: RunStore;
  /** The run the page opens in replay when the URL names none. Default none (the page lists runs). */
  readonly runId?: string;
  /** Closes the server when it aborts. Default none. */
  readonly signal?: AbortSignal;
  /** Real-time interval of the SSE keep-alive comment, ms. Default 15 000. */
  readonly heartbeatMs?: number;
  /**
   * Live streams (`/api/live`) served at once; one more is answered 503. Each stream costs the run a
   * copy of every event, so their number is what bounds that cost. Default 16.
   */
  readonly maxLiveClients?: number;
  /**
   * Bytes a live stream may have waiting for its reader; a client that does not read past this is
   * dropped, so a stalled reader cannot make the run buffer without end. Default 1 048 576 (1 MiB).
   */
  readonly maxBufferedBytes?: number;
  /**
   * TCP connections held at once (page, APIs and streams together). One more first closes the oldest
   * connection that is not serving a request (idle or still sending its head); when every one is serving,
   * the newcomer is closed. Default 64.
   */
  readonly maxConnections?: number;
  /** Real ms a connection has to send a complete request head (from opening, and after each answer). Default 3 000. */
  readonly headersTimeoutMs?: number;
  /**
   * Real-time interval at which a compressed live stream (a client that accepts gzip) is flushed, ms: the
   * events of a storm go out in one compressed block per interval instead of one packet each. Default 100.
   */
  readonly flushIntervalMs?: number;
  /**
   * On `close`, how long (real ms) the live streams get to take their last bytes (the run's end and its
   * report) before their connections are closed. Default 2 000.
   */
  readonly closeGraceMs?: number;
}

/** A running visualizer. */
export interface VizServer {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** Live streams open now, and how many were dropped because their reader lagged (since start). */
  stats(): {
    readonly liveClients: number;
    readonly droppedSlowClients: number;
    /** Bytes written to live streams since start, as sent on the wire (after compression). */
    readonly liveBytes: number;
  };
  /** Ends every live stream and closes the server. Safe to call twice. */
  close(): Promise<void>;
}

/** What `/api/config` tells the page. */
export interface VizPageConfig {
  readonly live: boolean;
  readonly liveRunId: string | null;
  readonly replay: boolean;
  readonly runId: string | null;
}

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

// Nothing the page needs comes from elsewhere: the policy makes the browser refuse any other origin.
/** Requests from elsewhere (another Origin, another site) are refused: see {@link startVizServer}. */
function forbiddenBy(req: IncomingMessage, port: number): string | undefined {
  const origin = req.headers.origin;
  if (
    origin !== undefined &&
    !new Set(localHosts(port).map((h) => `http://${h}`)).has(String(origin).toLowerCase())
  )
    return 'requests from another origin are refused';
  if (req.headers['sec-fetch-site'] === 'cross-site') return 'requests from another site are refused';
  return undefined;
}

const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(scrubValue(value));
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  res.end(body);
}

function intParam(url: URL, name: string): number | undefined {
  const raw = url.searchParams.get(name);
  if (raw === null || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new HttpError(400, `${name} must be a non-negative integer`);
  return n;
}

/**
 * Starts the state visualizer on 127.0.0.1: the page and its assets (bundled locally, nothing loaded from
 * another origin), the live feed as server-sent events (`/api/live`), and the replay APIs over the store:
 * `/api/runs`, `/api/runs/:id`, `/api/runs/:id/events?afterSeq=&untilAt=&limit=`,
 * `/api/runs/:id/turns?agent=`, `/api/runs/:id/snapshots?agent=`, `/api/runs/:id/report`; plus `/api/chart?machine=agent|breaker|supervisor` (a
 * statechart from the real machine) and `/api/live/agents/:name`. What it serves is built from the
 * runtime's events and the store (ids, fingerprints, classified faults), never from a key.
 *
 * It is built to be left open on a shared machine: it answers only requests whose `Host` is
 * `127.0.0.1:<port>` or `localhost:<port>` and whose `Origin` (when sent) is that same origin, so a web
 * page cannot read a run through DNS rebinding; at most `maxLiveClients` live streams run at once and a
 * stream whose reader lags by more than `maxBufferedBytes` is dropped; at most `maxConnections`
 * connections are held; lookups by name match own entries only.
 *
 * @example
 * ```ts
 * const viz = await startVizServer({ live: createLiveSource(supervisor, { clock }), store, port: 0 });
 * console.log(`visualizer: ${viz.url}`);
 * await viz.close();
 * ```
 */
export async function startVizServer(options: VizServerOptions = {}): Promise<VizServer> {
  const { live, store } = options;
  /** Each open live stream, with how to end it cleanly (flush and close its compressor). */
  const streams = new Map<ServerResponse, () => void>();
  const flushIntervalMs = options.flushIntervalMs ?? 100;
  const closeGraceMs = options.closeGraceMs ?? 2_000;
  let liveBytes = 0;
  const heartbeatMs = options.heartbeatMs ?? 15_000;
  const maxLiveClients = options.maxLiveClients ?? 16;
  const maxBufferedBytes = options.maxBufferedBytes ?? 1_048_576;
  let port = 0;
  let droppedSlowClients = 0;

  const config: VizPageConfig = {
    live: live !== undefined,
    liveRunId: live?.runId ?? null,
    replay: store !== undefined,
    runId: options.runId ?? null,
  };

  const requireStore = (): RunStore => {
    if (!store) throw new HttpError(404, 'this visualizer has no store: replay is not available');
    return store;
  };
  const requireLive = (): VizLiveSource => {
    if (!live) throw new HttpError(404, 'this visualizer has no live runtime');
    return live;
  };

  const stream = (req: IncomingMessage, res: ServerResponse) => {
    const source = requireLive();
    if (streams.size >= maxLiveClients)
      throw new HttpError(503, `at most ${maxLiveClients} live streams at once; close one and try again`);
    // A browser accepts gzip: the feed's JSON is repetitive and compresses about tenfold. A client that
    // does not ask for it gets the plain stream, written as events come.
    const gzip: Gzip | undefined = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))
      ? createGzip({ level: 6 })
      : undefined;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      ...(gzip ? { 'content-encoding': 'gzip' } : {}),
    });
    const rawWrite = res.write.bind(res);
    res.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
      liveBytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
      return rawWrite(chunk, ...rest);
    }) as typeof res.write;
    if (gzip) {
      gzip.pipe(res);
      gzip.on('error', () => res.destroy());
    }
    let allowance = maxBufferedBytes;
    let dirty = false;
    const waiting = () => res.writableLength + (gzip ? gzip.writableLength + gzip.readableLength : 0);
    let ended = false;
    const write = (text: string) => {
      // After `end`, a late sample must not write into the finished compressor (that would tear the stream).
      if (ended || res.writableEnded || res.destroyed) return;
      if (gzip) {
        gzip.write(text);
        dirty = true;
      } else res.write(text);
      // A reader that stopped reading is dropped: the run must not buffer for it without end.
      if (waiting() > allowance) {
        droppedSlowClients++;
        gzip?.unpipe(res);
        gzip?.destroy();
        res.destroy();
      }
    };
    const flush = () => {
      if (!gzip || !dirty || ended || res.destroyed || gzip.destroyed) return;
      dirty = false;
      gzip.flush(zlibConstants.Z_SYNC_FLUSH);
    };
    // Snapshot and subscription in the same tick: no event falls between them. The snapshot itself may
    // be large; the allowance is what waits beyond it.
    const init = `event: init\ndata: ${JSON.stringify(scrubValue({ state: source.snapshot(), runId: source.runId ?? null }))}\n\n`;
    allowance = maxBufferedBytes + Buffer.byteLength(init);
    write(init);
    flush();
    const unsubscribe = source.subscribe((event: VizEvent) => {
      write(`data: ${JSON.stringify(scrubValue(event))}\n\n`);
    });
    const beat = setInterval(() => {
      write(': keep-alive\n\n');
      flush();
    }, heartbeatMs);
    beat.unref();
    const flusher = gzip ? setInterval(flush, flushIntervalMs) : undefined;
    flusher?.unref();
    const end = () => {
      flush();
      ended = true;
      if (gzip) gzip.end();
      else res.end();
    };
    streams.set(res, end);
    const done = () => {
      clearInterval(beat);
      if (flusher) clearInterval(flusher);
      unsubscribe();
      streams.delete(res);
    };
    req.once('close', done);
    res.once('close', done);
  };

  const api = async (url: URL, parts: readonly string[], signal: AbortSignal): Promise<unknown> => {
    const [first, id, sub, more] = parts;
    if (first === 'config' && parts.length === 1) return config;
    if (first === 'chart' && parts.length === 1) {
      const machine = url.searchParams.get('machine') ?? 'agent';
      if (machine !== 'agent' && machine !== 'breaker' && machine !== 'supervisor')
        throw new HttpError(404, `no statechart "${machine}" (agent, breaker, supervisor)`);
      return machineStatechart(machine);
    }
    if (first === 'live' && id === 'state' && parts.length === 2) return requireLive().snapshot();
    if (first === 'live' && id === 'agents' && sub !== undefined && more === undefined) {
      const source = requireLive();
      const detail = source.agentDetail ? await source.agentDetail(sub, signal) : undefined;
      if (!detail) throw new HttpError(404, `no live agent "${sub}"`);
      return detail;
    }
    if (first !== 'runs' || more !== undefined) throw new HttpError(404, `no API at ${url.pathname}`);
    const s = requireStore();
    if (id === undefined) {
      const limit = intParam(url, 'limit');
      return s.listRuns({ signal, ...(limit !== undefined ? { limit } : {}) });
    }
    const run = await s.getRun(id, { signal });
    if (!run) throw new HttpError(404, `no run "${id}"`);
    if (sub === undefined) return run;
    if (sub === 'report') return loadRunReport(s, id, { signal });
    if (sub === 'events') {
      const afterSeq = intParam(url, 'afterSeq');
      const untilAt = intParam(url, 'untilAt');
      const limit = intParam(url, 'limit');
      return s.readEvents(id, {
        signal,
        ...(afterSeq !== undefined ? { afterSeq } : {}),
        ...(untilAt !== undefined ? { untilAt } : {}),
        ...(limit !== undefined ? { limit } : {}),
      });
    }
    if (sub === 'turns') {
      const agent = url.searchParams.get('agent');
      const turns = await s.listTurns(id, { signal });
      return turns.filter((t) => !agent || t.agent === agent).map(turnFromRecord);
    }
    if (sub === 'snapshots') {
      const agent = url.searchParams.get('agent');
      const all = await s.loadAgentStates(id, { signal, machineVersion: run.machineVersion });
      if (!agent) return all;
      // Own entries only: `?agent=__proto__` is an agent that does not exist, not Object.prototype.
      return Object.hasOwn(all, agent) ? all[agent] : null;
    }
    throw new HttpError(404, `no API at ${url.pathname}`);
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    // DNS rebinding: a page of another site can reach 127.0.0.1 under its own name; it must get nothing.
    const refused = checkLocalHost(req, port);
    if (refused) throw new HttpError(refused.status, refused.message);
    const forbidden = forbiddenBy(req, port);
    if (forbidden) throw new HttpError(403, `${forbidden}; open http://127.0.0.1:${port}/`);
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD' }).end();
      return;
    }
    if (url.pathname === '/api/live') return stream(req, res);
    if (url.pathname.startsWith('/api/')) {
      const parts = url.pathname
        .slice('/api/'.length)
        .split('/')
        .filter((p) => p !== '')
        .map((p) => decodeURIComponent(p));
      const aborted = new AbortController();
      res.once('close', () => aborted.abort());
      return sendJson(res, 200, await api(url, parts, aborted.signal));
    }
    const asset = await pageAsset(url.pathname);
    if (!asset) throw new HttpError(404, `nothing at ${url.pathname}`);
    res.writeHead(200, {
      'content-type': asset.contentType,
      'cache-control': 'no-store',
      'content-security-policy': CSP,
      'x-content-type-options': 'nosniff',
    });
    res.end(req.method === 'HEAD' ? undefined : asset.body);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      if (res.headersSent) {
        res.destroy();
        return;
      }
      const status =
        e instanceof HttpError
          ? e.status
          : isRunNotFoundError(e)
            ? 404
            : isSnapshotRestoreError(e)
              ? 409
              : e instanceof URIError
                ? 400
                : 500;
      sendJson(res, status, { error: e instanceof Error ? e.message : String(e) });
    });
  });

  server.requestTimeout = 30_000;
  // A client that sends its request slowly (or never) does not hold a connection for long, and a full
  // server makes room for a new client by closing an idle or slow one.
  guardConnections(server, {
    maxConnections: options.maxConnections ?? 64,
    headersTimeoutMs: options.headersTimeoutMs ?? 3_000,
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  port = (server.address() as AddressInfo).port;

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= new Promise<void>((resolve) => {
      options.signal?.removeEventListener('abort', onAbort);
      const open = [...streams];
      streams.clear();
      for (const [, end] of open) end();
      // What the streams were told last (the run's end) reaches the page before the sockets go.
      const sent = Promise.all(
        open.map(
          ([res]) =>
            new Promise<void>((done) => {
              if (res.writableFinished || res.destroyed) return done();
              res.once('finish', done);
              res.once('close', done);
            }),
        ),
      );
      // Bounded: a reader that does not take the last bytes within the grace loses them, not the caller.
      const grace = new Promise<void>((done) => setTimeout(done, closeGraceMs).unref());
      void Promise.race([sent, grace]).then(() => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    });
    return closing;
  };
  const onAbort = () => void close();
  if (options.signal?.aborted) await close();
  else options.signal?.addEventListener('abort', onAbort, { once: true });

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    stats: () => ({ liveClients: streams.size, droppedSlowClients, liveBytes }),
    close,
  };
}
