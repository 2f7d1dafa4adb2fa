import { connect } from 'node:net';
import { scrubSecrets } from '../../redact/secret-scrubber.ts';

/**
 * Tells "nothing answers" from "something else answers" on a database or Redis port: a driver that meets
 * another protocol says only "no answer" (PostgreSQL's parser waits for a message length it never gets)
 * or "Unknown RESP type 72. Please report this" (ioredis). One short exchange on a socket of its own
 * shows what is really there, for the one line the user reads.
 */

/** What a peer did with the first exchange: the bytes it sent, and whether it closed the connection first. */
export interface FirstBytes {
  readonly bytes: Buffer;
  /** It hung up before `timeoutMs` (with `bytes` empty: it closed without a word, unlike a frozen server). */
  readonly closed: boolean;
}

/**
 * Connects to `host:port`, writes `hello`, and resolves with the first bytes that come back within
 * `timeoutMs` (empty if the peer answered nothing), or `undefined` if it could not be reached.
 * Never rejects.
 *
 * @example
 * ```ts
 * const first = await firstBytesFrom('127.0.0.1', 5432, POSTGRES_SSL_REQUEST, 1_000);
 * ```
 */
export function firstBytesFrom(
  host: string,
  port: number,
  hello: Uint8Array,
  timeoutMs: number,
  complete: (bytes: Buffer) => boolean = () => false,
  nudge = true,
): Promise<FirstBytes | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    let got = Buffer.alloc(0);
    let connected = false;
    const done = (value: Buffer | undefined, closed = false) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(value === undefined ? undefined : { bytes: value, closed });
    };
    const timer = setTimeout(() => done(connected ? got : undefined), timeoutMs);
    timer.unref();
    socket.once('connect', () => {
      connected = true;
      socket.write(hello);
      // A line-based server (Redis, HTTP, SMTP…) waits for the end of a line before it says anything; a
      // silent peer gets one, so what answers speaks. A frozen server stays silent all the same.
      if (nudge)
        setTimeout(() => socket.writable && socket.write('\r\n'), Math.min(1_000, timeoutMs / 4)).unref();
    });
    socket.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d]);
      if (got.length >= 64 || complete(got)) done(got);
      // A short answer is complete at once: give it a moment for the rest of its line.
      else setTimeout(() => done(got), 50).unref();
    });
    socket.once('error', () => done(connected ? got : undefined, true));
    socket.once('close', () => done(connected ? got : undefined, true));
  });
}

/**
 * Bytes a foreign server sent, fit for one line: printable ASCII only (others as `.`), at most 32 chars,
 * scrubbed of anything shaped like a secret.
 *
 * @example
 * ```ts
 * shownBytes(Buffer.from('HTTP/1.1 400 Bad Request\r\n')); // '"HTTP/1.1 400 Bad Request.."'
 * ```
 */
export function shownBytes(bytes: Buffer): string {
  const text = [...bytes.subarray(0, 32)]
    .map((b) => (b >= 0x20 && b < 0x7f ? String.fromCharCode(b) : '.'))
    .join('');
  return JSON.stringify(`${scrubSecrets(text)}${bytes.length > 32 ? '…' : ''}`);
}

/** PostgreSQL's SSLRequest: a real server answers one byte, `S` or `N`, before anything else. */
export const POSTGRES_SSL_REQUEST = Buffer.from([0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f]);

/**
 * What the first bytes of an answer to {@link POSTGRES_SSL_REQUEST} say when they are not PostgreSQL's, in
 * a few words, or `undefined` (PostgreSQL answered: `S`, `N`, or an error message of its own).
 *
 * @example
 * ```ts
 * notPostgresAnswer(Buffer.from('-ERR unknown command')); // 'something that is not PostgreSQL answers there (it sent "-ERR unknown command")'
 * ```
 */
export function notPostgresAnswer(first: Buffer): string | undefined {
  if (first.length === 0) return undefined;
  if (first[0] === 0x53 || first[0] === 0x4e) return undefined;
  // An 'E' error message (an int32 length follows) is PostgreSQL refusing the request in its own words.
  if (first[0] === 0x45 && first[1] === 0) return undefined;
  return `something that is not PostgreSQL answers there (it sent ${shownBytes(first)}); check the host and port`;
}

/**
 * What answers a Redis URL when it is not Redis (the first line it sends to `PING`), or `undefined`.
 *
 * @example
 * ```ts
 * await notRedis('127.0.0.1', 5432, 1_000); // 'something that is not Redis answers there (it sent "E...")'
 * ```
 */
export async function notRedis(host: string, port: number, timeoutMs: number): Promise<string | undefined> {
  const answer = await firstBytesFrom(host, port, Buffer.from('PING\r\n'), timeoutMs, (b) =>
    b.includes(0x0a),
  );
  const first = answer?.bytes;
  if (first === undefined || first.length === 0) return undefined;
  if ('+-:$*_#,(!=%~>|'.includes(String.fromCharCode(first[0]!))) return undefined;
  return `something that is not Redis answers there: it sent ${shownBytes(first)}`;
}
