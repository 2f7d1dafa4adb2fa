import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Registry } from 'prom-client';

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
}

/**
 * Serves `registry` as Prometheus text at `GET /metrics` on 127.0.0.1 only (never on every interface: metrics
 * name endpoints and tiers). Anything else is 404.
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
  const server: Server = createServer((req, res) => {
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
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  options.signal?.addEventListener('abort', () => void close(), { once: true });
  return { url: `http://127.0.0.1:${port}/metrics`, close };
}
