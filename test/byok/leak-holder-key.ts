import { createHash } from 'node:crypto';

/**
 * The canary of the leak detectors' own test, made as bytes (never as a string) from a seed, so the
 * process holding it has exactly the copies its test puts there. `two-byte string` keys carry U+0109,
 * `non-ascii string` keys carry U+00E9: both are stored by V8 differently from ASCII (two-byte and
 * one-byte Latin-1 strings) and written as `\uXXXX` in a heap snapshot.
 */

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789';

/** The key as bytes: Latin-1 for one-byte forms, UTF-16LE for `two-byte string`. Wipe it after use. */
export function holderKeyBytes(seed: string, form: string): Buffer {
  const digest = createHash('sha256').update(`${seed}/${form}`).digest();
  const prefix =
    form === 'non-ascii string'
      ? 'sk-\u00e9t\u00e9-'
      : form === 'two-byte string'
        ? 'sk-\u0109-'
        : 'sk-proj-';
  // Code units only, no array of one-character strings: that would be a form of its own.
  const length = prefix.length + digest.length;
  const unit = (i: number) =>
    i < prefix.length
      ? prefix.charCodeAt(i)
      : ALPHABET.charCodeAt(digest[i - prefix.length]! % ALPHABET.length);
  const twoByte = form === 'two-byte string';
  const out = Buffer.alloc(Math.max(128, length * (twoByte ? 2 : 1))).subarray(0, length * (twoByte ? 2 : 1));
  for (let i = 0; i < length; i++) {
    if (twoByte) out.writeUInt16LE(unit(i), i * 2);
    else out[i] = unit(i);
  }
  digest.fill(0);
  return out;
}

/** The same key as a string, for the test that searches for it (never called in the holder). */
export function holderKey(seed: string, form: string): string {
  const bytes = holderKeyBytes(seed, form);
  return form === 'two-byte string' ? bytes.toString('utf16le') : bytes.toString('latin1');
}
