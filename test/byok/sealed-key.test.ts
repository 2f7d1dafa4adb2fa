import { describe, expect, it } from 'vitest';
import { KeySealer } from '../../src/byok/sealed-key.ts';

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
    expect(sealer.open(sealed, AAD, (k) => k)).toBe(KEY);
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
    expect(() => new KeySealer().open(sealed, AAD, (k) => k)).toThrow();
  });

  it('binds the ciphertext to its endpoint id (AAD) and refuses tampered data', () => {
    const sealer = new KeySealer();
    const sealed = sealer.seal(KEY, AAD);
    expect(() => sealer.open(sealed, 'byok:session-B:openai:1a2b3c4d', (k) => k)).toThrow();
    sealed.ciphertext[0] = (sealed.ciphertext[0]! + 1) % 256;
    expect(() => sealer.open(sealed, AAD, (k) => k)).toThrow();
  });

  it('wipe() zero-fills ciphertext, IV and tag, and a wiped key never opens', () => {
    const sealer = new KeySealer();
    const sealed = sealer.seal(KEY, AAD);
    const { ciphertext, iv, tag } = sealed;
    sealer.wipe(sealed);
    expect(sealed.wiped).toBe(true);
    expect([ciphertext, iv, tag].every(allZero)).toBe(true);
    expect(() => sealer.open(sealed, AAD, (k) => k)).toThrow(/wiped/);
  });

  it('destroy() makes every sealed key unreadable', () => {
    const sealer = new KeySealer();
    const sealed = sealer.seal(KEY, AAD);
    sealer.destroy();
    expect(() => sealer.open(sealed, AAD, (k) => k)).toThrow(/destroyed/);
    expect(() => sealer.seal(KEY, AAD)).toThrow(/destroyed/);
  });

  it('returns what the user of the plaintext returns, a promise included', async () => {
    const sealer = new KeySealer();
    const sealed = sealer.seal(KEY, AAD);
    await expect(sealer.open(sealed, AAD, async (k) => k.length)).resolves.toBe(KEY.length);
  });
});
