import { createServer, connect, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy on 127.0.0.1 for chaos tests of a client against a real server (PostgreSQL): it forwards,
 * and on command freezes (stops forwarding in both directions and stops reading, every connection kept
 * open: a server that hangs), answers garbage (bytes that are not the server's protocol), or resets every
 * connection. Bounded: at most `maxConnections` connections; `close()` ends everything.
 */

/** What the proxy does with bytes. */
export type ProxyMode = 'forward' | 'freeze' | 'garbage';

/** A running proxy. */
export interface TcpProxy {
  readonly port: number;
  /** Connections accepted so far. */
  readonly accepted: () => number;
  /** Switches the mode for every open and future connection. */
  setMode(mode: ProxyMode): void;
  /** Destroys every open connection (both sides). */
  resetAll(): void;
  close(): Promise<void>;
}

/** Bytes no PostgreSQL server sends: an unknown message type with an absurd length, then noise. */
const GARBAGE = Buffer.from(
  `Z\u00ff\u00ff\u00ff\u00ffHTTP/1.1 200 OK\r\n\r\n<html>not postgres</html>`,
  'latin1',
);

/**
 * Starts a proxy to `target` (host and port) in `forward` mode.
 *
 * @example
 * ```ts
 * const proxy = await startTcpProxy({ host: '127.0.0.1', port: 5432 });
 * proxy.setMode('freeze');
 * ```
 */
export async function startTcpProxy(
  target: { host: string; port: number },
  options: { maxConnections?: number; initialMode?: ProxyMode } = {},
): Promise<TcpProxy> {
  let mode: ProxyMode = options.initialMode ?? 'forward';
  const pairs = new Set<{ client: Socket; upstream: Socket | undefined }>();
  let accepted = 0;

  const apply = (pair: { client: Socket; upstream: Socket | undefined }) => {
    const { client, upstream } = pair;
    if (mode === 'forward') {
      client.resume();
      upstream?.resume();
      return;
    }
    // Stop moving bytes: nothing read is passed on, and nothing more is read.
    client.pause();
    upstream?.pause();
    if (mode === 'garbage' && !client.destroyed) client.write(GARBAGE);
  };

  const server: Server = createServer((client) => {
    accepted++;
    client.on('error', () => {});
    const pair: { client: Socket; upstream: Socket | undefined } = { client, upstream: undefined };
    pairs.add(pair);
    const drop = () => {
      client.destroy();
      pair.upstream?.destroy();
      pairs.delete(pair);
    };
    client.on('close', drop);
    if (mode !== 'forward') {
      apply(pair);
      return;
    }
    const upstream = connect(target.port, target.host);
    pair.upstream = upstream;
    upstream.on('error', () => {});
    upstream.on('close', drop);
    client.on('data', (d) => {
      if (mode === 'forward') upstream.write(d);
    });
    upstream.on('data', (d) => {
      if (mode === 'forward') client.write(d);
    });
  });
  server.maxConnections = options.maxConnections ?? 64;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    port,
    accepted: () => accepted,
    setMode(next) {
      mode = next;
      for (const pair of pairs) apply(pair);
    },
    resetAll() {
      for (const pair of [...pairs]) {
        pair.client.resetAndDestroy();
        pair.upstream?.destroy();
      }
      pairs.clear();
    },
    async close() {
      for (const pair of [...pairs]) {
        pair.client.destroy();
        pair.upstream?.destroy();
      }
      pairs.clear();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
