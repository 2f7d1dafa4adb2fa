import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Keeps a local server open to new clients when others hold connections without using them. Node's own
 * `headersTimeout` is only checked every `connectionsCheckingInterval` (30 s by default) and
 * `maxConnections` refuses the *newest* connection, so 64 clients that send a request's head one byte at
 * a time (or nothing) lock everyone else out for a minute. Here each connection gets its own deadline for
 * a complete request head, and a full server makes room by closing its oldest connection that is not
 * serving a request (a slow or idle one) before it refuses a newcomer.
 */

/**
 * Options of {@link guardConnections}.
 *
 * @example
 * ```ts
 * guardConnections(server, { maxConnections: 64, headersTimeoutMs: 3_000 });
 * ```
 */
export interface ConnectionGuardOptions {
  /** Connections held at once; one more first evicts an idle or slow one, else is closed. Default 64. */
  readonly maxConnections?: number;
  /**
   * Real ms a connection has for a complete request head from its opening; after an answer, the server's
   * `keepAliveTimeout` plus this (a kept-alive connection's next request). Default 3 000.
   */
  readonly headersTimeoutMs?: number;
}

/** What {@link guardConnections} reports. */
export interface ConnectionGuard {
  /** Connections held now, and how many were cut (no complete head in time) or evicted (room made). */
  stats(): { readonly open: number; readonly cutSlow: number; readonly evicted: number };
}

interface Held {
  busy: number;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Arms per-connection request-head deadlines and the eviction policy on `server` (call before `listen`).
 * Also sets Node's own `headersTimeout`/`requestTimeout` checks to run often, as a second line.
 *
 * @example
 * ```ts
 * const server = createServer(handler);
 * guardConnections(server, { maxConnections: 64 });
 * server.listen(0, '127.0.0.1');
 * ```
 */
export function guardConnections(server: Server, options: ConnectionGuardOptions = {}): ConnectionGuard {
  const max = options.maxConnections ?? 64;
  const headersTimeoutMs = options.headersTimeoutMs ?? 3_000;
  // Insertion order is age order: the first idle entry is the oldest idle connection.
  const held = new Map<Socket, Held>();
  let cutSlow = 0;
  let evicted = 0;

  server.headersTimeout = headersTimeoutMs;
  server.requestTimeout = Math.max(
    server.requestTimeout === 0 ? 30_000 : server.requestTimeout,
    headersTimeoutMs,
  );

  const arm = (socket: Socket, h: Held, ms: number) => {
    clearTimeout(h.timer);
    h.timer = setTimeout(() => {
      if (h.busy > 0) return;
      cutSlow += 1;
      socket.destroy();
    }, ms);
    h.timer.unref();
  };

  server.on('connection', (socket: Socket) => {
    if (held.size >= max) {
      let victim: Socket | undefined;
      for (const [s, h] of held) {
        if (h.busy === 0) {
          victim = s;
          break;
        }
      }
      if (!victim) {
        socket.destroy();
        return;
      }
      evicted += 1;
      const h = held.get(victim);
      clearTimeout(h?.timer);
      held.delete(victim);
      victim.destroy();
    }
    const h: Held = { busy: 0, timer: undefined };
    held.set(socket, h);
    arm(socket, h, headersTimeoutMs);
    socket.once('close', () => {
      clearTimeout(h.timer);
      held.delete(socket);
    });
  });

  server.on('request', (req, res) => {
    const h = held.get(req.socket);
    if (!h) return;
    h.busy += 1;
    clearTimeout(h.timer);
    h.timer = undefined;
    res.once('close', () => {
      h.busy -= 1;
      // A kept-alive connection is the client's to reuse until the `Keep-Alive: timeout` Node told it (closing
      // it earlier races the client's next request); its next head then gets the usual deadline.
      if (h.busy === 0 && !req.socket.destroyed)
        arm(req.socket, h, server.keepAliveTimeout + headersTimeoutMs);
    });
  });

  return { stats: () => ({ open: held.size, cutSlow, evicted }) };
}
