/**
 * The byte patterns a key can leave in a process's memory: as UTF-8 / Latin-1 bytes (a Buffer, a one-byte
 * V8 string), as UTF-16LE (a two-byte string, a Uint16Array), as UTF-32LE (an Int32Array of char codes),
 * as an array of small integers (V8 Smis: on x64 without pointer compression each is 4 zero bytes then the
 * int32), as doubles (a Float64Array or a double array), as hex and base64 text (in each byte alignment),
 * and split in two halves (two strings or two buffers), each half in UTF-8 and UTF-16LE.
 */

/** One pattern to look for. */
export interface KeyForm {
  /** What it is, e.g. `utf16le`, `base64@1`, `first half utf8`. */
  readonly name: string;
  readonly bytes: Buffer;
}

function base64Forms(name: string, bytes: Buffer, url: boolean): KeyForm[] {
  const out: KeyForm[] = [];
  for (let shift = 0; shift < 3; shift++) {
    const padded = Buffer.concat([Buffer.alloc(shift), bytes]);
    let text = padded.toString(url ? 'base64url' : 'base64').replace(/=+$/, '');
    // Drop the characters that depend on bytes around the key: the first group when shifted, the last.
    text = text.slice(shift === 0 ? 0 : 4, Math.max(0, text.length - 4));
    if (text.length >= 12) out.push({ name: `${name}@${shift}`, bytes: Buffer.from(text, 'latin1') });
  }
  return out;
}

function codeUnits(text: string): number[] {
  return Array.from({ length: text.length }, (_, i) => text.charCodeAt(i));
}

/**
 * Every form of `key` worth searching a memory image for. Halves need at least 10 characters each.
 *
 * @example
 * ```ts
 * for (const form of keyForms(key)) if (image.indexOf(form.bytes) >= 0) console.log('leak as', form.name);
 * ```
 */
export function keyForms(key: string): KeyForm[] {
  const forms: KeyForm[] = [];
  const add = (name: string, bytes: Buffer) => {
    if (bytes.length > 0 && !forms.some((f) => f.bytes.equals(bytes))) forms.push({ name, bytes });
  };
  const utf8 = Buffer.from(key, 'utf8');
  add('utf8', utf8);
  if (codeUnits(key).every((c) => c <= 0xff)) add('latin1', Buffer.from(key, 'latin1'));
  add('utf16le', Buffer.from(key, 'utf16le'));
  const units = codeUnits(key);
  const int32 = Buffer.alloc(units.length * 4);
  units.forEach((c, i) => {
    int32.writeInt32LE(c, i * 4);
  });
  add('utf32le / Int32Array', int32);
  const smis = Buffer.alloc(units.length * 8);
  units.forEach((c, i) => {
    smis.writeInt32LE(c, i * 8 + 4);
  });
  add('array of char codes (Smis)', smis);
  const doubles = Buffer.alloc(units.length * 8);
  units.forEach((c, i) => {
    doubles.writeDoubleLE(c, i * 8);
  });
  add('array of char codes (doubles)', doubles);
  for (const hex of [utf8.toString('hex'), utf8.toString('hex').toUpperCase()]) {
    add(`hex (${hex === hex.toUpperCase() ? 'upper' : 'lower'})`, Buffer.from(hex, 'latin1'));
    add(`hex (${hex === hex.toUpperCase() ? 'upper' : 'lower'}) utf16le`, Buffer.from(hex, 'utf16le'));
  }
  for (const f of [...base64Forms('base64', utf8, false), ...base64Forms('base64url', utf8, true)]) {
    add(f.name, f.bytes);
    add(`${f.name} utf16le`, Buffer.from(f.bytes.toString('latin1'), 'utf16le'));
  }
  if (key.length >= 20) {
    const mid = Math.floor(key.length / 2);
    for (const [half, text] of [
      ['first half', key.slice(0, mid)],
      ['second half', key.slice(mid)],
    ] as const) {
      add(`${half} utf8`, Buffer.from(text, 'utf8'));
      add(`${half} utf16le`, Buffer.from(text, 'utf16le'));
    }
  }
  return forms;
}

/**
 * The strings a heap snapshot search looks for: the key and its two halves (a key split in two strings
 * leaves at least one whole half in one of them).
 *
 * @example
 * ```ts
 * keyTexts('sk-proj-abcdefghijklmnop'); // ['sk-proj-abcdefghijklmnop', 'sk-proj-abcd', 'efghijklmnop']
 * ```
 */
export function keyTexts(key: string): string[] {
  if (key.length < 20) return [key];
  const mid = Math.floor(key.length / 2);
  return [key, key.slice(0, mid), key.slice(mid)];
}
