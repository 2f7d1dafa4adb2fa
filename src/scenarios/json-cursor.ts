/*
 * The lexical half of scanJson (json-scan.ts): a position in text `JSON.parse` already accepted, with its line.
 * Strings are read whole (their value is a key); numbers, true, false and null are only stepped over.
 */

/** A position in valid JSON text, and the 1-based line it is on. */
export class JsonCursor {
  /** Index of the next character. */
  i = 0;
  /** The 1-based line of `i`. */
  line = 1;

  constructor(readonly text: string) {}

  /** Steps over whitespace, counting lines. */
  skipWs(): void {
    const text = this.text;
    for (;;) {
      const c = text.charCodeAt(this.i);
      if (c === 10) this.line++;
      else if (c !== 32 && c !== 9 && c !== 13) return;
      this.i++;
    }
  }

  /** Reads a string token at `i` (which is `"`), returns its value. */
  readString(): string {
    const text = this.text;
    let end = this.i + 1;
    let escaped = false;
    for (; end < text.length; end++) {
      const c = text.charCodeAt(end);
      if (escaped) escaped = false;
      else if (c === 92) escaped = true;
      else if (c === 34) break;
    }
    const raw = text.slice(this.i, end + 1);
    this.i = end + 1;
    return JSON.parse(raw) as string;
  }

  /** Steps over a number, `true`, `false` or `null`. */
  readScalar(): void {
    const text = this.text;
    const start = this.i;
    while (this.i < text.length && !',]}'.includes(text[this.i]!) && !/\s/.test(text[this.i]!)) this.i++;
    if (this.i === start) throw new Error('not JSON');
  }
}
