import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the fixture saw. */
export interface SeenRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: http.IncomingHttpHeaders;
  readonly body: unknown;
}

/** What the fixture does with a request: answer it, or hand the response to the test. */
export type FixtureReply =
  | { readonly status: number; readonly headers?: Record<string, string>; readonly body: unknown }
  | { readonly manual: true };

/** A raw `node:http` server on 127.0.0.1 that replays exact provider bodies and records requests. */
export interface RawFixtureServer {
  readonly url: string;
  readonly seen: SeenRequest[];
  /** Decides the reply of the next requests (default: 404). */
  reply(fn: (req: SeenRequest) => FixtureReply): void;
  /** Resolves with the response object of the next request answered `{ manual: true }`. */
  nextManual(): Promise<http.ServerResponse>;
  close(): Promise<void>;
}

/** Starts a {@link RawFixtureServer}. */
export async function startRawFixture(): Promise<RawFixtureServer> {
  const seen: SeenRequest[] = [];
  const sockets = new Set<import('node:net').Socket>();
  let decide: (req: SeenRequest) => FixtureReply = () => ({ status: 404, body: { error: 'no route' } });
  const manualQueue: http.ServerResponse[] = [];
  const manualWaiters: ((res: http.ServerResponse) => void)[] = [];

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      let body: unknown = text;
      try {
        body = text ? JSON.parse(text) : undefined;
      } catch {
        // keep the text
      }
      const record: SeenRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body,
      };
      seen.push(record);
      const reply = decide(record);
      if ('manual' in reply) {
        const waiter = manualWaiters.shift();
        if (waiter) waiter(res);
        else manualQueue.push(res);
        return;
      }
      const payload = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
      res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
      res.end(payload);
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    reply(fn) {
      decide = fn;
    },
    nextManual() {
      const ready = manualQueue.shift();
      if (ready) return Promise.resolve(ready);
      return new Promise((resolve) => manualWaiters.push(resolve));
    },
    close() {
      for (const s of sockets) s.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}
