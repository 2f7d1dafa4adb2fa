import { randomBytes } from 'node:crypto';
import { KeySealer, keyBuffer, type SealedKey } from '../redact/sealed-key.ts';
import { keyedFingerprint } from '../redact/key-fingerprint.ts';

/**
 * How an engine call gets its key without any long-lived plaintext: the key is sealed (AES-256-GCM) in a
 * credential; the SDK client is built with the credential's *marker* as its `apiKey`, so the client, its
 * headers and every string the SDK makes hold only the marker; and the HTTP layer
 * (`credential-fetch.ts`) swaps the marker for the key's bytes in the request head right before it goes
 * on the socket, from a buffer that is wiped once the write completed.
 */

/**
 * Every marker starts with this; the HTTP layer looks for it in request heads.
 *
 * @example
 * ```ts
 * credential.marker.startsWith(MARKER_PREFIX); // true
 * ```
 */
export const MARKER_PREFIX = 'bwk-';
/**
 * A marker as it appears in a request head.
 *
 * @example
 * ```ts
 * for (const m of head.matchAll(MARKER_PATTERN)) credentialFor(m[0]);
 * ```
 */
export const MARKER_PATTERN = /bwk-[0-9a-f]{32}/g;

/**
 * A sealed API key an engine can send, never read as a string.
 *
 * @example
 * ```ts
 * const credential = createCallCredential(process.env.OPENAI_API_KEY!);
 * const client = new OpenAI({ apiKey: credential.marker, fetch: credentialFetch });
 * ```
 */
export interface CallCredential {
  /** Stands in for the key wherever the SDK keeps or sends it (`bwk-` + 32 hex). Not a secret. */
  readonly marker: string;
  /** The key's keyed fingerprint (`keyedFingerprint`): its loggable identity, stable within this process. */
  readonly fingerprint: string;
  /** Byte length of the key. */
  readonly length: number;
  /** True once disposed: the key is wiped and {@link CallCredential.withKey} throws. */
  readonly disposed: boolean;
  /**
   * Decrypts the key into an off-heap buffer, hands it to `use` and zero-fills it when `use` returns.
   * `use` must copy what it needs and must not turn the bytes into a string.
   */
  withKey<T>(use: (key: Buffer) => T): T;
  /** Wipes the sealed key and forgets the marker. Idempotent. */
  dispose(): void;
}

/**
 * Options of {@link createCallCredential}.
 *
 * @example
 * ```ts
 * createCallCredential(keyBytes, { sealer: new KeySealer(), aad: 'byok:s1:openai:1a2b3c4d' });
 * ```
 */
export interface CallCredentialOptions {
  /**
   * The sealer to seal with (the BYOK vault passes its own, so closing the vault destroys it). Default:
   * one process-wide sealer with an ephemeral key.
   */
  readonly sealer?: KeySealer;
  /** Authenticated data the key is bound to (an endpoint id). Default: the marker. */
  readonly aad?: string;
}

/** Seals configured keys: one ephemeral AES key per process, made on first use. */
let sharedSealer: KeySealer | undefined;
function processSealer(): KeySealer {
  if (!sharedSealer) sharedSealer = new KeySealer();
  return sharedSealer;
}

/** Live credentials by marker. Weak, so an engine nobody holds takes its credential with it. */
const byMarker = new Map<string, WeakRef<CallCredential>>();
const forget = new FinalizationRegistry<string>((marker) => {
  const ref = byMarker.get(marker);
  if (ref && ref.deref() === undefined) byMarker.delete(marker);
});

/**
 * The key's keyed fingerprint (HMAC-SHA256 under a process secret, first 8 hex chars; see
 * `src/redact/key-fingerprint.ts`), or `none` without a key. Safe to log and persist: no dictionary
 * recovers a key from it.
 *
 * @example
 * ```ts
 * fingerprintOf(keyBytes); // e.g. '5f1a6c0e'
 * ```
 */
export function fingerprintOf(key: string | Uint8Array | undefined): string {
  return keyedFingerprint(key);
}

/**
 * Seals `key` into a {@link CallCredential}. A string is copied (the caller's string stays the caller's);
 * bytes are read once and may be wiped by the caller right after.
 *
 * @example
 * ```ts
 * const credential = createCallCredential(keyBytes, { sealer: vaultSealer, aad: endpointId });
 * keyBytes.fill(0);
 * ```
 */
export function createCallCredential(
  key: string | Uint8Array,
  options: CallCredentialOptions = {},
): CallCredential {
  const sealer = options.sealer ?? processSealer();
  const marker = `${MARKER_PREFIX}${randomBytes(16).toString('hex')}`;
  const aad = options.aad ?? marker;
  const sealed: SealedKey = sealer.seal(key, aad);
  const length = sealed.ciphertext.length;
  const fingerprint = fingerprintOf(key);
  let disposed = false;
  const credential: CallCredential = {
    marker,
    fingerprint,
    length,
    get disposed() {
      return disposed || sealed.wiped;
    },
    withKey(use) {
      if (disposed) throw new Error('the credential was disposed');
      return sealer.open(sealed, aad, use);
    },
    dispose() {
      if (disposed) return;
      disposed = true;
      sealer.wipe(sealed);
      byMarker.delete(marker);
    },
  };
  byMarker.set(marker, new WeakRef(credential));
  forget.register(credential, marker);
  return Object.freeze(credential);
}

/**
 * The live credential a marker stands for, or undefined (unknown, disposed or collected).
 *
 * @example
 * ```ts
 * credentialFor('bwk-…')?.withKey((key) => key.copy(head, at));
 * ```
 */
export function credentialFor(marker: string): CallCredential | undefined {
  const credential = byMarker.get(marker)?.deref();
  return credential && !credential.disposed ? credential : undefined;
}

/**
 * Replaces every occurrence of the credential's key in `bytes` (a response body as received) with
 * `[redacted]`, before the body is ever decoded into a string. Returns `bytes` itself when the key does
 * not occur (the common case), else a new buffer.
 *
 * @example
 * ```ts
 * const safe = redactKeyIn(credential, await response.bytes());
 * ```
 */
export function redactKeyIn(credential: CallCredential | undefined, bytes: Buffer): Buffer {
  if (!credential || credential.disposed || credential.length === 0 || bytes.length < credential.length)
    return bytes;
  return credential.withKey((key) => {
    if (bytes.indexOf(key) < 0) return bytes;
    const parts: Buffer[] = [];
    let from = 0;
    for (let at = bytes.indexOf(key); at >= 0; at = bytes.indexOf(key, from)) {
      parts.push(bytes.subarray(from, at), Buffer.from('[redacted]'));
      from = at + key.length;
    }
    parts.push(bytes.subarray(from));
    const out = Buffer.concat(parts);
    bytes.fill(0);
    return out;
  });
}

/**
 * Bytes of a key as an off-heap buffer the caller wipes (for callers that start from a string).
 *
 * @example
 * ```ts
 * const bytes = keyBytesOf(process.env.OPENAI_API_KEY!);
 * try { await vault.inject('s1', 'openai', bytes); } finally { bytes.fill(0); }
 * ```
 */
export function keyBytesOf(key: string): Buffer {
  const buf = keyBuffer(Buffer.byteLength(key, 'utf8'));
  buf.write(key, 'utf8');
  return buf;
}
