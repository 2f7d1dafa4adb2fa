import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A raw `node:http` server that replays exact provider responses, byte for byte, so tests can drive
 * the real SDKs into every error path. Routes are keyed by the first path segment: point an SDK's
 * base URL at `server.url('a429')` and every request under `/a429/…` gets that route's reply,
 * whatever path the SDK appends (`/v1/messages`, `/v1/chat/completions`, `/v1beta/models/…`).
 *
 * @example
 * ```ts
 * const server = await startWireFixtureServer({
 *   a529: { status: 529, headers: { 'request-id': 'req_1' }, body: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } } },
 *   reset: { action: 'destroy' },
 * });
 * const client = new Anthropic({ baseURL: server.url('a529'), apiKey: 'k', maxRetries: 0 });
 * afterAll(() => server.close());
 * ```
 */

/** One canned reply, or a function giving it when the request arrives (a reset instant "7 s from now"). */
export type FixtureReply = CannedReply | ((request: FixtureRequest) => CannedReply);

/** A reply as it is sent. */
export type CannedReply =
  /** A complete response. An object/array body is sent as JSON (content-type defaults to application/json); a string is sent verbatim. */
  | { readonly status: number; readonly headers?: Readonly<Record<string, string>>; readonly body?: unknown }
  /** HTTP 200 `text/event-stream`, each chunk written as-is (include the `\n\n`), then the response ends. */
  | { readonly sse: readonly string[]; readonly headers?: Readonly<Record<string, string>> }
  /**
   * A socket-level fault: `destroy` resets the connection as soon as the request arrives
   * (undici reports `UND_ERR_SOCKET`); `hang` never answers (the server's `close()` ends it).
   */
  | { readonly action: 'destroy' | 'hang' };

/** What the server saw for one request. */
export interface FixtureRequest {
  readonly route: string;
  readonly method: string;
  readonly path: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  readonly body: string;
}

export interface WireFixtureServer {
  /** `http://127.0.0.1:<port>` */
  readonly origin: string;
  /** `origin + '/' + route`: the base URL to hand an SDK. */
  url(route: string): string;
  /** Adds or replaces a route. */
  route(name: string, reply: FixtureReply): void;
  /** Every request received for `route`, in order. */
  requests(route: string): readonly FixtureRequest[];
  /** Resolves when the next request for `route` has arrived (use it to abort mid-flight, without sleeping). */
  nextRequest(route: string): Promise<FixtureRequest>;
  /** Destroys hanging sockets and stops listening. */
  close(): Promise<void>;
}

/** Starts a fixture server on 127.0.0.1 with an ephemeral port. */
export async function startWireFixtureServer(
  routes: Readonly<Record<string, FixtureReply>> = {},
): Promise<WireFixtureServer> {
  const table = new Map<string, FixtureReply>(Object.entries(routes));
  const seen = new Map<string, FixtureRequest[]>();
  const waiters = new Map<string, ((r: FixtureRequest) => void)[]>();
  const sockets = new Set<Socket>();

  const server: Server = createServer((req, res) => {
    void handle(req, res);
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const path = req.url ?? '/';
    const route = path.split('/')[1]?.split('?')[0] ?? '';
    const record: FixtureRequest = {
      route,
      method: req.method ?? 'GET',
      path,
      headers: req.headers,
      body: Buffer.concat(chunks).toString('utf8'),
    };
    seen.set(route, [...(seen.get(route) ?? []), record]);
    const pending = waiters.get(route) ?? [];
    waiters.delete(route);
    for (const resolve of pending) resolve(record);

    const entry = table.get(route);
    const reply = typeof entry === 'function' ? entry(record) : entry;
    if (!reply) {
      res.writeHead(599, { 'content-type': 'text/plain' }).end(`wire fixture: no route "${route}"`);
      return;
    }
    if ('action' in reply) {
      if (reply.action === 'destroy') req.socket.destroy();
      return; // hang: leave the socket open until close()
    }
    if ('sse' in reply) {
      res.writeHead(200, {
        'content-type': 'text/event-stream',
        'cache-control': 'no-cache',
        ...reply.headers,
      });
      for (const chunk of reply.sse) res.write(chunk);
      res.end();
      return;
    }
    const isText = typeof reply.body === 'string';
    const payload =
      reply.body === undefined ? '' : isText ? (reply.body as string) : JSON.stringify(reply.body);
    const headers: Record<string, string> = {
      ...(reply.body !== undefined && !isText ? { 'content-type': 'application/json' } : {}),
      ...reply.headers,
    };
    res.writeHead(reply.status, headers).end(payload);
  }

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  return {
    origin,
    url: (route) => `${origin}/${route}`,
    route: (name, reply) => {
      table.set(name, reply);
    },
    requests: (route) => seen.get(route) ?? [],
    nextRequest: (route) =>
      new Promise((resolve) => {
        waiters.set(route, [...(waiters.get(route) ?? []), resolve]);
      }),
    close: async () => {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/**
 * A 127.0.0.1 port that was bound and then released, so connecting to it is refused (ECONNREFUSED).
 *
 * @example
 * ```ts
 * const port = await closedPort();
 * new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'k', maxRetries: 0 });
 * ```
 */
export async function closedPort(): Promise<number> {
  const probe = createServer();
  probe.listen(0, '127.0.0.1');
  await once(probe, 'listening');
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}
