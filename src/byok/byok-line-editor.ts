import { keyBuffer } from '../redact/sealed-key.ts';

/** Longest line kept, in bytes; a longer one is refused whole. */
const MAX_LINE = 4096;

/** What the line editor needs, every option resolved. */
export interface LineEditorParts {
  /** Keystrokes from a terminal in raw mode: escape sequences skipped, Backspace, Ctrl+U and Ctrl+C obeyed. */
  readonly raw: boolean;
  /** What Ctrl+C does in raw mode. */
  readonly interrupt: () => void;
  /** Prints one line for the user. */
  readonly say: (line: string) => void;
  /** Takes one finished line (bytes wiped once it returns). */
  readonly submit: (line: Buffer) => void;
}

/** The console's line editor: bytes in, finished lines out, nothing kept past a line. */
export interface LineEditor {
  /** Reads a chunk of input; the chunk is wiped once read. */
  feed(chunk: string | Buffer): void;
  /** The input ended: a line typed without its newline is submitted. */
  finish(): void;
  /** Wipes the line being typed. */
  wipe(): void;
}

// A small line editor over bytes: raw mode hands us keystrokes, a pipe hands us text; both end up in
// one off-heap line buffer that is wiped after every line.
export function createLineEditor({ raw, interrupt, say, submit }: LineEditorParts): LineEditor {
  const line = keyBuffer(MAX_LINE);
  let length = 0;
  let overflow = false;
  let inEscape: 'none' | 'start' | 'csi' | 'ss3' = 'none';
  let lastWasCR = false;
  const endLine = () => {
    if (overflow) say(`refused a line longer than ${MAX_LINE} bytes (it was not kept); paste the key alone`);
    else submit(line.subarray(0, length));
    line.fill(0, 0, Math.min(MAX_LINE, length));
    length = 0;
    overflow = false;
  };
  const append = (b: number) => {
    if (length < MAX_LINE) line[length++] = b;
    else overflow = true;
  };
  const onData = (chunk: string | Buffer) => {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    try {
      for (const b of bytes) {
        if (raw && inEscape !== 'none') {
          if (inEscape === 'start') inEscape = b === 0x5b ? 'csi' : b === 0x4f ? 'ss3' : 'none';
          else if (inEscape === 'csi') {
            if (b >= 0x40 && b <= 0x7e) inEscape = 'none';
          } else inEscape = 'none';
          continue;
        }
        if (b === 0x0a && lastWasCR) {
          lastWasCR = false;
          continue;
        }
        lastWasCR = b === 0x0d;
        if (b === 0x0d || b === 0x0a) endLine();
        else if (raw && b === 0x1b) inEscape = 'start';
        else if (raw && b === 0x03) interrupt();
        else if (raw && (b === 0x7f || b === 0x08)) {
          // One character back: drop UTF-8 continuation bytes with their lead byte.
          while (length > 0 && (line[length - 1]! & 0xc0) === 0x80) line[--length] = 0;
          if (length > 0) line[--length] = 0;
        } else if (raw && b === 0x15) {
          line.fill(0, 0, length);
          length = 0;
        } else append(b); // Other control bytes stay in the line, and the parser refuses it whole.
      }
    } finally {
      // The bytes read may hold a key: nothing keeps them past this call.
      bytes.fill(0);
    }
  };
  return {
    feed: onData,
    finish() {
      if (length > 0 || overflow) endLine();
    },
    wipe() {
      line.fill(0);
      length = 0;
    },
  };
}
