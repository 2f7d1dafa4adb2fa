import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/**
 * AES-256-GCM sealing of BYOK keys in memory. The sealer owns one ephemeral 32-byte key made when it
 * is created and never leaves the process; each sealed key has its own random 12-byte IV and is
 * bound to its endpoint id as additional authenticated data, so a ciphertext cannot be opened under
 * another endpoint's name.
 */

const ALGORITHM = 'aes-256-gcm';
const IV_BYTES = 12;

/**
 * One sealed key: ciphertext, IV and GCM tag — nothing else. Buffers are owned by the sealer and
 * zero-filled by {@link KeySealer.wipe}.
 *
 * @example
 * ```ts
 * const sealed = sealer.seal('sk-user-key-0001', 'byok:s1:openai:1a2b3c4d');
 * sealed.ciphertext.length; // 16 (same length as the key)
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
  const size = chunks.reduce((n, c) => n + c.length, 0);
  const out = Buffer.alloc(size);
  let at = 0;
  for (const c of chunks) {
    c.copy(out, at);
    at += c.length;
    c.fill(0);
  }
  return out;
}

/**
 * Seals and opens keys with one ephemeral AES-256-GCM key.
 *
 * @example
 * ```ts
 * const sealer = new KeySealer();
 * const sealed = sealer.seal(userKey, endpointId);
 * const answer = await sealer.open(sealed, endpointId, (key) => callProvider(key));
 * sealer.wipe(sealed); // buffers zero-filled; open() now throws
 * ```
 */
export class KeySealer {
  readonly #key: Buffer = randomBytes(32);
  #destroyed = false;

  /** Encrypts `plaintext` under a fresh IV, bound to `aad` (the endpoint id). */
  seal(plaintext: string, aad: string): SealedKey {
    this.#assertUsable();
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv(ALGORITHM, this.#key, iv);
    cipher.setAAD(Buffer.from(aad, 'utf8'));
    // Buffer.alloc, not Buffer.from: the plaintext bytes must not land in the shared 8 KB pool slab.
    const plain = Buffer.alloc(Buffer.byteLength(plaintext, 'utf8'));
    plain.write(plaintext, 'utf8');
    try {
      const ciphertext = ownCopy([cipher.update(plain), cipher.final()]);
      return { ciphertext, iv, tag: cipher.getAuthTag(), wiped: false } satisfies MutableSealedKey;
    } finally {
      plain.fill(0);
    }
  }

  /**
   * Decrypts `sealed` and hands the plaintext to `use` for the duration of that call only; the
   * decrypted bytes are zero-filled as soon as the string is made. Whatever `use` returns (a promise
   * too) is returned. Throws when the key was wiped or the data does not authenticate under `aad`.
   */
  open<T>(sealed: SealedKey, aad: string, use: (plaintext: string) => T): T {
    this.#assertUsable();
    if (sealed.wiped) throw new Error('the sealed key was wiped');
    const decipher = createDecipheriv(ALGORITHM, this.#key, sealed.iv);
    decipher.setAAD(Buffer.from(aad, 'utf8'));
    decipher.setAuthTag(sealed.tag);
    const plain = ownCopy([decipher.update(sealed.ciphertext), decipher.final()]);
    let text: string;
    try {
      text = plain.toString('utf8');
    } finally {
      plain.fill(0);
    }
    return use(text);
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
