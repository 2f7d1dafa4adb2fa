import http from 'node:http';
import https from 'node:https';
import type { Socket } from 'node:net';
import type { Readable } from 'node:stream';
import zlib from 'node:zlib';
import { credentialFor, MARKER_PATTERN, MARKER_PREFIX } from './call-credential.ts';

/**
 * A `fetch` for the SDKs that sends a sealed key without ever making it a string. The SDK client holds a
 * credential's marker as its `apiKey`; Node's HTTP client writes the request head (with the marker in
 * `Authorization`, `x-api-key` or `x-goog-api-key`) as a string to the socket; the socket's `write` is
 * wrapped so that the head becomes a buffer in which each marker is replaced by the key's bytes, and that
 * buffer is zero-filled once the kernel took it. Everything else behaves like the platform `fetch`: a
 * transport failure rejects with `TypeError('fetch failed', { cause })`, an abort with the signal's reason,
 * a body cut mid-way errors the body stream with `TypeError('terminated', { cause })`.
 */

type WriteCallback = (error?: Error | null) => void;
type SocketWrite = (chunk: unknown, encoding?: unknown, callback?: unknown) => boolean;

/** Builds the head buffer with every live marker replaced by its key, or undefined when nothing to swap. */
function spliceHead(text: string, encoding: BufferEncoding): Buffer | undefined {
  const headEnd = text.indexOf('\r\n\r\n');
  if (headEnd < 0) return undefined;
  const head = text.slice(0, headEnd);
  const pieces: (string | { marker: string })[] = [];
  let from = 0;
  let swapped = false;
  for (const m of head.matchAll(MARKER_PATTERN)) {
    const credential = credentialFor(m[0]);
    // An unknown or disposed marker goes out as it is: the provider refuses it (401), nothing leaks.
    if (!credential) continue;
    pieces.push(head.slice(from, m.index), { marker: m[0] });
    from = m.index + m[0].length;
    swapped = true;
  }
  if (!swapped) return undefined;
  pieces.push(text.slice(from));
  let size = 0;
  for (const p of pieces)
    size += typeof p === 'string' ? Buffer.byteLength(p, encoding) : (credentialFor(p.marker)?.length ?? 0);
  // Buffer.alloc, never the shared pool: this buffer is wiped after the write and nothing else shares it.
  const out = Buffer.alloc(Math.max(size, 128)).subarray(0, size);
  let at = 0;
  for (const p of pieces) {
    if (typeof p === 'string') at += out.write(p, at, encoding);
    else {
      const credential = credentialFor(p.marker);
      if (credential) at += credential.withKey((key) => key.copy(out, at));
    }
  }
  return at === size ? out : out.subarray(0, at);
}

/** Wraps a socket's `write` so request heads carrying a marker go out with the key, from a wiped buffer. */
function guardSocket<S extends Socket>(socket: S): S {
  const write = socket.write as unknown as SocketWrite;
  (socket as unknown as { write: SocketWrite }).write = function guardedWrite(
    this: Socket,
    chunk: unknown,
    encoding?: unknown,
    callback?: unknown,
  ): boolean {
    if (typeof chunk === 'string' && chunk.includes(MARKER_PREFIX)) {
      const cb = (typeof encoding === 'function' ? encoding : callback) as WriteCallback | undefined;
      const enc = (typeof encoding === 'string' ? encoding : 'utf8') as BufferEncoding;
      const spliced = spliceHead(chunk, enc);
      if (spliced) {
        return write.call(this, spliced, (error?: Error | null) => {
          spliced.fill(0);
          cb?.(error);
        });
      }
    }
    return write.call(this, chunk, encoding, callback);
  };
  return socket;
}

class GuardedHttpAgent extends http.Agent {
  override createConnection(...args: Parameters<http.Agent['createConnection']>) {
    return guardSocket(super.createConnection(...args) as Socket);
  }
}

class GuardedHttpsAgent extends https.Agent {
  override createConnection(...args: Parameters<https.Agent['createConnection']>) {
    return guardSocket(super.createConnection(...args) as Socket);
  }
}

/**
 * An `init` property {@link credentialFetch} reads besides the standard ones: called as each body chunk arrives,
 * before any reader sees it. `timedFetch` stamps a streamed call's last sign of life with it, instead of hooking
 * every read the SDK makes (a promise more per chunk).
 */
export const ON_BODY_CHUNK: unique symbol = Symbol('breakwater.onBodyChunk');

/** `RequestInit` with {@link ON_BODY_CHUNK}. */
export interface CredentialFetchInit extends RequestInit {
  readonly [ON_BODY_CHUNK]?: () => void;
}

const agents = {
  'http:': new GuardedHttpAgent({ keepAlive: true }),
  'https:': new GuardedHttpsAgent({ keepAlive: true }),
};

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

async function bodyBytes(body: unknown): Promise<Buffer | undefined> {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string') return Buffer.from(body, 'utf8');
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  // Streams, blobs, form data, URLSearchParams: let the platform serialize them.
  return Buffer.from(
    await new Request('http://127.0.0.1/', {
      method: 'POST',
      body: body as BodyInit,
      duplex: 'half',
    } as RequestInit).arrayBuffer(),
  );
}

function decoded(res: http.IncomingMessage): Readable {
  const encoding = String(res.headers['content-encoding'] ?? '')
    .trim()
    .toLowerCase();
  const decoder =
    encoding === 'gzip' || encoding === 'x-gzip'
      ? zlib.createGunzip()
      : encoding === 'deflate'
        ? zlib.createInflate()
        : encoding === 'br'
          ? zlib.createBrotliDecompress()
          : undefined;
  if (!decoder) return res;
  res.on('error', (e) => decoder.destroy(e));
  return res.pipe(decoder);
}

/**
 * The response body as the web stream `fetch` gives, fed straight from Node's stream: one hop per chunk (a relay
 * `Readable` and `Readable.toWeb` cost two more, and `toWeb` copies every chunk). The HTTP parser emits one `data`
 * per HTTP chunk (a streamed answer: one per SSE event) all in the same turn of the event loop; they are handed on
 * as one chunk at the end of that turn, as the platform fetch hands on what one socket read brought: a reader makes
 * one read per socket read, not one per event (each read of a web stream costs promises and a queue round trip).
 * Backpressure pauses the Node stream; cancelling the body destroys it (the connection closes, as the platform
 * fetch does). `finished` runs once when the body ends, errors or is cancelled; on an error it returns the reason to
 * report (the caller's abort reason), or undefined for a body cut mid-way, which errors as the platform fetch does:
 * `TypeError('terminated')`.
 */
function webBody(
  stream: Readable,
  finished: () => unknown,
  onChunk: (() => void) | undefined,
): ReadableStream<Uint8Array> {
  let open = true;
  // What arrived in this turn and is not handed on yet (undefined: nothing; a flush is queued when it is set).
  let pending: Buffer[] | undefined;
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  const flush = () => {
    const chunks = pending;
    pending = undefined;
    if (!open || chunks === undefined) return;
    controller.enqueue(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks));
    if ((controller.desiredSize ?? 1) <= 0) stream.pause();
  };
  return new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c;
        stream.on('data', (chunk: Buffer) => {
          if (!open) return;
          onChunk?.();
          if (pending) pending.push(chunk);
          else {
            pending = [chunk];
            queueMicrotask(flush);
          }
        });
        stream.on('end', () => {
          if (!open) return;
          flush();
          open = false;
          finished();
          c.close();
        });
        stream.on('error', (err) => {
          if (!open) return;
          flush();
          open = false;
          c.error(finished() ?? new TypeError('terminated', { cause: err }));
        });
      },
      pull() {
        stream.resume();
      },
      cancel() {
        if (!open) return;
        open = false;
        finished();
        stream.destroy();
      },
    },
    { highWaterMark: 64 * 1024, size: (chunk) => chunk.byteLength },
  );
}

function toHeaders(res: http.IncomingMessage): Headers {
  const headers = new Headers();
  for (let i = 0; i + 1 < res.rawHeaders.length; i += 2) {
    try {
      headers.append(res.rawHeaders[i]!, res.rawHeaders[i + 1]!);
    } catch {
      // A header value fetch would refuse: drop it rather than fail the call.
    }
  }
  return headers;
}

/**
 * `fetch` over Node's HTTP client with the credential marker swap (see the module comment). Hand it to
 * an SDK as its `fetch` option (`timedFetch` does when the call has a credential).
 *
 * @example
 * ```ts
 * const credential = createCallCredential(keyBytes);
 * const client = new OpenAI({ apiKey: credential.marker, fetch: credentialFetch, maxRetries: 0 });
 * ```
 */
export const credentialFetch: typeof fetch = async (input, init) => {
  const request = input instanceof Request ? input : undefined;
  const url = new URL(request ? request.url : input instanceof URL ? input.href : String(input));
  if (url.username || url.password) {
    // The platform fetch refuses these too; its message would echo the URL, this one does not.
    throw new TypeError('fetch failed', {
      cause: Object.assign(new Error('a URL that carries a user or password is refused'), {
        code: 'ERR_INVALID_URL',
      }),
    });
  }
  const agent = agents[url.protocol as keyof typeof agents];
  if (!agent)
    throw new TypeError('fetch failed', { cause: new Error(`unsupported protocol ${url.protocol}`) });
  const method = (init?.method ?? request?.method ?? 'GET').toUpperCase();
  const headers = new Headers(init?.headers ?? request?.headers);
  const signal = init?.signal ?? request?.signal ?? undefined;
  const body = await bodyBytes(init?.body ?? (request?.body ? await request.arrayBuffer() : undefined));
  signal?.throwIfAborted();
  if (!headers.has('accept-encoding')) headers.set('accept-encoding', 'gzip, deflate, br');
  if (body && !headers.has('content-length')) headers.set('content-length', String(body.length));
  const outgoing: Record<string, string> = {};
  headers.forEach((value, name) => {
    outgoing[name] = value;
  });

  return new Promise<Response>((resolve, reject) => {
    const transport = url.protocol === 'https:' ? https : http;
    let response: http.IncomingMessage | undefined;
    let settled = false;
    const req = transport.request(url, { method, headers: outgoing, agent });
    const onAbort = () => {
      const reason = abortReason(signal!);
      const err =
        reason instanceof Error ? reason : new DOMException('This operation was aborted', 'AbortError');
      req.destroy(err);
      response?.destroy(err);
      if (!settled) {
        settled = true;
        reject(reason);
      }
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    const done = () => signal?.removeEventListener('abort', onAbort);
    req.on('error', (err) => {
      done();
      if (settled) return;
      settled = true;
      reject(signal?.aborted ? abortReason(signal) : new TypeError('fetch failed', { cause: err }));
    });
    req.on('response', (res) => {
      response = res;
      settled = true;
      const status = res.statusCode ?? 0;
      const empty = method === 'HEAD' || status === 204 || status === 205 || status === 304;
      let web: ReadableStream<Uint8Array> | null = null;
      if (empty) {
        res.resume();
        res.on('end', done);
      } else {
        web = webBody(
          decoded(res),
          () => {
            done();
            // A body cut mid-way reads as the platform fetch reports it: TypeError('terminated', { cause }).
            return signal?.aborted ? abortReason(signal) : undefined;
          },
          (init as CredentialFetchInit | undefined)?.[ON_BODY_CHUNK],
        );
      }
      if (status < 200 || status > 599) {
        reject(new TypeError('fetch failed', { cause: new Error(`unexpected HTTP status ${status}`) }));
        return;
      }
      const out = new Response(web, { status, statusText: res.statusMessage ?? '', headers: toHeaders(res) });
      Object.defineProperty(out, 'url', { value: url.href });
      resolve(out);
    });
    req.end(body);
  });
};
