import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';
import { guardConnections } from '../http/connection-guard.ts';
import { checkLocalHost } from '../http/local-host-check.ts';

/** A `/metrics` endpoint on 127.0.0.1. */
export interface MetricsServer {
  /** `http://127.0.0.1:PORT/metrics`. */
  readonly url: string;
  close(): Promise<void>;
}

/** Options of {@link startMetricsServer}. */
export interface MetricsServerOptions {
  /** Port on 127.0.0.1. Default 0: any free port (read it from `url`). */
  readonly port?: number;
  /** Aborting it closes the server. Default: none. */
  readonly signal?: AbortSignal;
  /** TCP connections held at once; one more first closes an idle or slow one. Default 16. */
  readonly maxConnections?: number;
  /** Real ms a connection has to send a complete request head. Default 3 000. */
  readonly headersTimeoutMs?: number;
}

/**
 * Serves `registry` as Prometheus text at `GET /metrics` on 127.0.0.1 only (never on every interface: metrics
 * name endpoints and tiers). Anything else is 404. Only a `Host` of `127.0.0.1:<port>` or `localhost:<port>` is
 * answered (a page of another site reaching 127.0.0.1 under its own name gets 403; two `Host` headers get
 * 400), and a client that holds a connection without sending a request is cut after a few seconds.
 *
 * @example
 * ```ts
 * const server = await startMetricsServer(createBreakwaterMetrics(supervisor).registry, { port: 9464 });
 * console.log(`scrape ${server.url}`);
 * ```
 */
export async function startMetricsServer(
  registry: Registry,
  options: MetricsServerOptions = {},
): Promise<MetricsServer> {
  let port = 0;
  const server: Server = createServer((req, res) => {
    const refused = checkLocalHost(req, port);
    if (refused) {
      res.writeHead(refused.status, { 'content-type': 'text/plain' }).end(`${refused.message}\n`);
      return;
    }
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found; metrics are at /metrics\n');
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': registry.contentType }).end(text),
      () => res.writeHead(500, { 'content-type': 'text/plain' }).end('metrics could not be collected\n'),
    );
  });
  guardConnections(server, {
    maxConnections: options.maxConnections ?? 16,
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
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  options.signal?.addEventListener('abort', () => void close(), { once: true });
  return { url: `http://127.0.0.1:${port}/metrics`, close };
}
