import type { IncomingMessage } from 'node:http';

/**
 * The one Host check of every server breakwater opens on 127.0.0.1 (the visualizer, `/metrics`, the
 * emulator's control routes). A page of another site can reach 127.0.0.1 under a name of its own (DNS
 * rebinding): the browser then sends that name as `Host`, so a server that answers any `Host` hands the
 * page whatever it serves. Only `127.0.0.1:<port>` and `localhost:<port>` are ours. A request with two
 * `Host` headers (or none) is malformed (RFC 9112 §3.2): Node keeps the first and drops the rest, so a
 * proxy in front and this server could disagree on where it goes; it gets 400.
 */

/** Why a request was refused: the status to answer and a one-line reason. */
export interface HostRefusal {
  /** 400 for a missing or doubled Host, 403 for a foreign one. */
  readonly status: 400 | 403;
  readonly message: string;
}

/**
 * The `Host` values a local server on `port` answers to.
 *
 * @example
 * ```ts
 * localHosts(8080); // ['127.0.0.1:8080', 'localhost:8080']
 * ```
 */
export function localHosts(port: number): string[] {
  return [`127.0.0.1:${port}`, `localhost:${port}`];
}

/**
 * Checks the request's `Host` against this server's own names; `undefined` when it may be served.
 *
 * @example
 * ```ts
 * const refused = checkLocalHost(req, port);
 * if (refused) return res.writeHead(refused.status, { 'content-type': 'text/plain' }).end(`${refused.message}\n`);
 * ```
 */
export function checkLocalHost(req: IncomingMessage, port: number): HostRefusal | undefined {
  const local = localHosts(port);
  return checkHost(
    req,
    (host) => local.includes(host),
    `the Host header is not 127.0.0.1 or localhost on this port; open http://127.0.0.1:${port}/`,
  );
}

/**
 * The Host check with the accepted names left to the caller: exactly one `Host` header (else 400), and
 * `accepts` of its value, trimmed and lower-cased (else 403 with `foreignMessage`).
 *
 * @example
 * ```ts
 * const refused = checkHost(req, (h) => h === 'llm-emulator:8701', 'the Host header is not a name of this emulator');
 * ```
 */
export function checkHost(
  req: IncomingMessage,
  accepts: (host: string) => boolean,
  foreignMessage: string,
): HostRefusal | undefined {
  let count = 0;
  let value = '';
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    if (req.rawHeaders[i]!.toLowerCase() !== 'host') continue;
    count += 1;
    value = req.rawHeaders[i + 1]!;
  }
  if (count !== 1)
    return {
      status: 400,
      message:
        count === 0
          ? 'the request has no Host header'
          : `the request has ${count} Host headers; exactly one is allowed`,
    };
  if (!accepts(value.trim().toLowerCase())) return { status: 403, message: foreignMessage };
  return undefined;
}
