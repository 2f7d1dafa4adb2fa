import { createCipheriv, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * AES-256-GCM sealing of API keys in memory. The sealer owns one ephemeral 32-byte key made when it is
 * created, which never leaves the process; each sealed key has its own random 12-byte IV and is bound to
 * its endpoint id as additional authenticated data, so a ciphertext cannot be opened under another name.
 *
 * Opening never lets the plaintext pass through a buffer Node allocates (those are freed without being
 * wiped): the GCM keystream is computed with AES-CTR over zeros, XORed with the ciphertext into a buffer of
 * ours, and the tag is checked by sealing that buffer again. The plaintext therefore exists only in
 * {@link keyBuffer}s, which are off the V8 heap (never moved by the GC) and zero-filled after use.
 */

const GCM = 'aes-256-gcm';
const CTR = 'aes-256-ctr';
const IV_BYTES = 12;
/**
 * V8 keeps typed arrays of up to 64 bytes inside its heap, where a garbage collection may copy them and
 * leave the old bytes behind. Anything larger lives in a fixed native allocation, so buffers that hold a
 * key are made at least this large and used through a subarray.
 */
const OFF_HEAP_BYTES = 128;

/**
 * A zero-filled buffer of `length` bytes whose memory V8 never moves, for key material: fill it, use it,
 * then `fill(0)` it.
 *
 * @example
 * ```ts
 * const key = keyBuffer(40);
 * try { readKeyInto(key); use(key); } finally { key.fill(0); }
 * ```
 */
export function keyBuffer(length: number): Buffer {
  return Buffer.alloc(Math.max(length, OFF_HEAP_BYTES)).subarray(0, length);
}

/**
 * One sealed key: ciphertext, IV and GCM tag — nothing else. Buffers are owned by the sealer and
 * zero-filled by {@link KeySealer.wipe}.
 *
 * @example
 * ```ts
 * const sealed = sealer.seal(userKeyBytes, 'byok:s1:openai:1a2b3c4d');
 * sealed.ciphertext.length; // same length as the key
 * ```
 */
export interface SealedKey {
  readonly ciphertext: Buffer;
  readonly iv: Buffer;
  readonly tag: Buffer;
  /** True once {@link KeySealer.wipe} zero-filled the buffers; a wiped key never opens again. */
  readonly wiped: boolean;
}

interface MutableSealedKey extends SealedKey {
  wiped: boolean;
}

/** Copies into a buffer of its own (never a slice of Node's shared pool), so zero-filling it is exact. */
function ownCopy(chunks: readonly Buffer[]): Buffer {
  const out = Buffer.alloc(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    c.copy(out, at);
    at += c.length;
  }
  return out;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/**
 * Seals and opens keys with one ephemeral AES-256-GCM key.
 *
 * @example
 * ```ts
 * const sealer = new KeySealer();
 * const sealed = sealer.seal(userKeyBytes, endpointId);
 * sealer.open(sealed, endpointId, (key) => key.copy(requestHead, at)); // key wiped on return
 * sealer.wipe(sealed); // buffers zero-filled; open() now throws
 * ```
 */
export class KeySealer {
  readonly #key: Buffer;
  #destroyed = false;

  /**
   * @param key the 32-byte AES key to seal under (copied). Default: 32 random bytes made here, which is
   *   what every runtime use wants; a given key is for interoperability tests.
   */
  constructor(key?: Uint8Array) {
    if (key !== undefined && key.length !== 32) throw new RangeError('a KeySealer key is 32 bytes');
    this.#key = Buffer.alloc(32);
    if (key) Buffer.from(key.buffer, key.byteOffset, key.byteLength).copy(this.#key);
    else randomBytes(32).copy(this.#key);
  }

  /**
   * Encrypts `plaintext` under a fresh IV, bound to `aad` (the endpoint id). A string is copied into an
   * off-heap buffer first (the string itself stays the caller's); bytes are read as they are, and stay
   * the caller's to wipe.
   */
  seal(plaintext: string | Uint8Array, aad: string): SealedKey {
    this.#assertUsable();
    const owned = typeof plaintext === 'string';
    const plain = owned
      ? keyBuffer(Buffer.byteLength(plaintext, 'utf8'))
      : Buffer.from(plaintext.buffer, plaintext.byteOffset, plaintext.byteLength);
    if (owned) plain.write(plaintext, 'utf8');
    try {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv(GCM, this.#key, iv);
      cipher.setAAD(Buffer.from(aad, 'utf8'));
      // Node's outputs here hold ciphertext only: the plaintext is read in place.
      const ciphertext = ownCopy([cipher.update(plain), cipher.final()]);
      return { ciphertext, iv, tag: cipher.getAuthTag(), wiped: false } satisfies MutableSealedKey;
    } finally {
      if (owned) plain.fill(0);
    }
  }

  /**
   * Decrypts `sealed` into an off-heap buffer, hands it to `use`, and zero-fills it as soon as `use`
   * returns (when `use` returns a promise: once it settles). Whatever `use` returns is returned. Throws
   * when the key was wiped or does not authenticate under `aad`. `use` must copy what it needs: the
   * buffer is empty afterwards.
   */
  open<T>(sealed: SealedKey, aad: string, use: (plaintext: Buffer) => T): T {
    this.#assertUsable();
    if (sealed.wiped) throw new Error('the sealed key was wiped');
    const length = sealed.ciphertext.length;
    // GCM encrypts with AES-CTR from inc32(IV || 0^31 || 1) = IV || 0x00000002.
    const counter = Buffer.alloc(16);
    sealed.iv.copy(counter, 0);
    counter.writeUInt32BE(2, 12);
    const ctr = createCipheriv(CTR, this.#key, counter);
    const stream = ownCopy([ctr.update(Buffer.alloc(length)), ctr.final()]);
    const plain = keyBuffer(length);
    for (let i = 0; i < length; i++) plain[i] = sealed.ciphertext[i]! ^ stream[i]!;
    stream.fill(0);
    let handedOver = false;
    try {
      // Authenticate by sealing the result again under the same IV and AAD: the tags must match.
      const check = createCipheriv(GCM, this.#key, sealed.iv);
      check.setAAD(Buffer.from(aad, 'utf8'));
      check.update(plain);
      check.final();
      const tag = check.getAuthTag();
      if (tag.length !== sealed.tag.length || !timingSafeEqual(tag, sealed.tag)) {
        throw new Error('the sealed key does not authenticate under this endpoint id');
      }
      const result = use(plain);
      if (isThenable(result)) {
        handedOver = true;
        const wipe = () => plain.fill(0);
        return Promise.resolve(result).finally(wipe) as T;
      }
      return result;
    } finally {
      if (!handedOver) plain.fill(0);
    }
  }

  /** Zero-fills a sealed key's ciphertext, IV and tag. Idempotent. */
  wipe(sealed: SealedKey): void {
    sealed.ciphertext.fill(0);
    sealed.iv.fill(0);
    sealed.tag.fill(0);
    (sealed as MutableSealedKey).wiped = true;
  }

  /** Zero-fills the sealer's own key: nothing sealed by it can be opened any more. Idempotent. */
  destroy(): void {
    this.#key.fill(0);
    this.#destroyed = true;
  }

  #assertUsable(): void {
    if (this.#destroyed) throw new Error('the key sealer was destroyed');
  }
}
