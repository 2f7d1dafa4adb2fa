import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { guardConnections } from '../http/connection-guard.ts';
import type { RunStore } from '../store/run-store.ts';
import type { VizLiveSource } from './live-source.ts';
import { LiveStreams } from './live-streams.ts';
import type { VizPageConfig } from './viz-api.ts';
import { sendError } from './viz-http.ts';
import { handleRequest } from './viz-routes.ts';

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
  const closeGraceMs = options.closeGraceMs ?? 2_000;
  const streams = new LiveStreams({
    flushIntervalMs: options.flushIntervalMs ?? 100,
    heartbeatMs: options.heartbeatMs ?? 15_000,
    maxLiveClients: options.maxLiveClients ?? 16,
    maxBufferedBytes: options.maxBufferedBytes ?? 1_048_576,
  });
  let port = 0;

  const config: VizPageConfig = {
    live: live !== undefined,
    liveRunId: live?.runId ?? null,
    replay: store !== undefined,
    runId: options.runId ?? null,
  };
  const sources = { config, live, store };

  const server = createServer((req, res) => {
    handleRequest(req, res, { port, sources, streams }).catch((e: unknown) => sendError(res, e));
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
      void streams.endAll(closeGraceMs).then(() => {
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
    stats: () => streams.stats(),
    close,
  };
}
