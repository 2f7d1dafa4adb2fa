import { describe, expect, it } from 'vitest';
import { createCipheriv, createDecipheriv } from 'node:crypto';
import { KeySealer, keyBuffer } from '../../src/redact/sealed-key.ts';

const KEY = 'sk-proj-sealedKeyTest00000000000000a1b2';
const AAD = 'byok:session-A:openai:1a2b3c4d';

const allZero = (b: Buffer) => b.every((x) => x === 0);

describe('KeySealer (AES-256-GCM, ephemeral key)', () => {
  it('stores only ciphertext, a 12-byte IV and a 16-byte tag, and opens back to the key', () => {
    const sealer = new KeySealer();
    const sealed = sealer.seal(KEY, AAD);
    expect(Object.keys(sealed).sort()).toEqual(['ciphertext', 'iv', 'tag', 'wiped']);
    expect(sealed.ciphertext.length).toBe(Buffer.byteLength(KEY));
    expect(sealed.iv.length).toBe(12);
    expect(sealed.tag.length).toBe(16);
    expect(sealed.ciphertext.toString('latin1')).not.toContain(KEY.slice(0, 8));
    expect(sealer.open(sealed, AAD, (k) => k.toString())).toBe(KEY);
    expect(sealer.open(sealer.seal(Buffer.from(KEY), AAD), AAD, (k) => k.toString())).toBe(KEY);
  });

  it('uses a fresh IV for every encryption, so the same key never gives the same ciphertext', () => {
    const sealer = new KeySealer();
    const a = sealer.seal(KEY, AAD);
    const b = sealer.seal(KEY, AAD);
    expect(a.iv.equals(b.iv)).toBe(false);
    expect(a.ciphertext.equals(b.ciphertext)).toBe(false);
  });

  it('each sealer has its own key: another sealer cannot open it', () => {
    const sealed = new KeySealer().seal(KEY, AAD);
    expect(() => new KeySealer().open(sealed, AAD, (k) => k.toString())).toThrow();
  });

  it('binds the ciphertext to its endpoint id (AAD) and refuses tampered data', () => {
    const sealer = new KeySealer();
    const sealed = sealer.seal(KEY, AAD);
    expect(() => sealer.open(sealed, 'byok:session-B:openai:1a2b3c4d', (k) => k.toString())).toThrow();
    sealed.ciphertext[0] = (sealed.ciphertext[0]! + 1) % 256;
    expect(() => sealer.open(sealed, AAD, (k) => k.toString())).toThrow();
  });

  it('wipe() zero-fills ciphertext, IV and tag, and a wiped key never opens', () => {
    const sealer = new KeySealer();
    const sealed = sealer.seal(KEY, AAD);
    const { ciphertext, iv, tag } = sealed;
    sealer.wipe(sealed);
    expect(sealed.wiped).toBe(true);
    expect([ciphertext, iv, tag].every(allZero)).toBe(true);
    expect(() => sealer.open(sealed, AAD, (k) => k.toString())).toThrow(/wiped/);
  });

  it('destroy() makes every sealed key unreadable', () => {
    const sealer = new KeySealer();
    const sealed = sealer.seal(KEY, AAD);
    sealer.destroy();
    expect(() => sealer.open(sealed, AAD, (k) => k.toString())).toThrow(/destroyed/);
    expect(() => sealer.seal(KEY, AAD)).toThrow(/destroyed/);
  });

  it('returns what the user of the plaintext returns, a promise included', async () => {
    const sealer = new KeySealer();
    const sealed = sealer.seal(KEY, AAD);
    await expect(sealer.open(sealed, AAD, async (k) => k.length)).resolves.toBe(KEY.length);
  });

  it('the plaintext buffer handed to `use` is zero-filled once it returns (once it settles, for a promise)', async () => {
    const sealer = new KeySealer();
    const sealed = sealer.seal(KEY, AAD);
    let seen: Buffer | undefined;
    sealer.open(sealed, AAD, (k) => {
      expect(k.toString()).toBe(KEY);
      seen = k;
    });
    expect(seen && allZero(seen)).toBe(true);
    let later: Buffer | undefined;
    const pending = sealer.open(sealed, AAD, async (k) => {
      later = k;
      await new Promise((r) => setImmediate(r));
      expect(k.toString()).toBe(KEY);
    });
    await pending;
    expect(later && allZero(later)).toBe(true);
    expect(() =>
      sealer.open(sealed, AAD, () => {
        throw new Error('boom');
      }),
    ).toThrow('boom');
  });

  it("is standard AES-256-GCM both ways: Node's decipher opens what it seals, and it opens what Node's cipher sealed", () => {
    const key = Buffer.alloc(32, 7);
    const sealer = new KeySealer(key);
    const sealed = sealer.seal(KEY, AAD);
    const decipher = createDecipheriv('aes-256-gcm', key, sealed.iv);
    decipher.setAAD(Buffer.from(AAD));
    decipher.setAuthTag(sealed.tag);
    expect(Buffer.concat([decipher.update(sealed.ciphertext), decipher.final()]).toString()).toBe(KEY);

    const iv = Buffer.alloc(12, 3);
    const cipher = createCipheriv('aes-256-gcm', key, iv);
    cipher.setAAD(Buffer.from(AAD));
    const ciphertext = Buffer.concat([cipher.update(KEY), cipher.final()]);
    const foreign = { ciphertext, iv, tag: cipher.getAuthTag(), wiped: false };
    expect(sealer.open(foreign, AAD, (k) => k.toString())).toBe(KEY);
    const tampered = { ...foreign, tag: Buffer.from(foreign.tag) };
    tampered.tag[0] = (tampered.tag[0]! + 1) % 256;
    expect(() => sealer.open(tampered, AAD, (k) => k.toString())).toThrow(/authenticate/);
  });

  it('keyBuffer() gives memory outside the V8 heap (a typed array over 64 bytes), zero-filled', () => {
    const small = keyBuffer(10);
    expect(small.length).toBe(10);
    expect(small.buffer.byteLength).toBeGreaterThan(64);
    expect(allZero(small)).toBe(true);
  });
});
