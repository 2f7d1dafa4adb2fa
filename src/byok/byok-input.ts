import type { CompatFlavor, ProviderKind } from '../core/engine-types.ts';
import { ConfigError } from '../core/errors/config-error.ts';
import { keyBuffer } from '../redact/sealed-key.ts';

/**
 * Checks of what a user hands the vault. The key is looked at byte by byte and never turned into a
 * string: no message contains it, only what is wrong with it.
 */

const SOURCE = 'byok';
const MAX_KEY_BYTES = 1024;
/** setTimeout's limit: a larger TTL would fire at once (TimeoutOverflowWarning). */
const MAX_TIMER_MS = 2_147_483_647;

/**
 * A positive, finite number of ms a timer can hold (at most 2^31 − 1, about 24.8 days), else a
 * `ConfigError` at `path` that names the limit.
 *
 * @example
 * ```ts
 * positiveMs(options.idleTtlMs ?? 7_200_000, 'idleTtlMs');
 * ```
 */
export function positiveMs(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0 || value > MAX_TIMER_MS) {
    throw new ConfigError({
      source: SOURCE,
      path,
      message: `must be a positive number of milliseconds, at most ${MAX_TIMER_MS} (about 24.8 days)`,
    });
  }
  return value;
}

/**
 * A non-empty session id, else a `ConfigError` at `sessionId`.
 *
 * @example
 * ```ts
 * checkSessionId('tty-1'); // 'tty-1'
 * ```
 */
export function checkSessionId(sessionId: unknown): string {
  if (typeof sessionId !== 'string' || sessionId.length === 0 || sessionId.length > 200) {
    throw new ConfigError({
      source: SOURCE,
      path: 'sessionId',
      message: 'must be a non-empty string of at most 200 characters',
    });
  }
  return sessionId;
}

/** The shape keys of one provider have. */
interface KeyFormat {
  /** How the message names the provider's keys. */
  readonly name: string;
  /** Accepted prefixes (any of them), e.g. `sk-`. Empty: any. */
  readonly prefixes: readonly string[];
  /** Minimum characters after the prefix. */
  readonly minBody: number;
  /** `token`: letters, digits, `-`, `_`; `visible`: any visible ASCII character. */
  readonly charset: 'token' | 'visible';
  /** What the message tells the user a key of this provider looks like. */
  readonly looksLike: string;
}

const OPENAI: KeyFormat = {
  name: 'an OpenAI key',
  prefixes: ['sk-'],
  minBody: 20,
  charset: 'token',
  looksLike: 'starts with "sk-" followed by at least 20 letters, digits, "-" or "_"',
};
const ANTHROPIC: KeyFormat = {
  name: 'an Anthropic key',
  prefixes: ['sk-ant-'],
  minBody: 20,
  charset: 'token',
  looksLike: 'starts with "sk-ant-" followed by at least 20 letters, digits, "-" or "_"',
};
const GOOGLE: KeyFormat = {
  name: 'a Google (Gemini) API key',
  prefixes: ['AIza'],
  minBody: 30,
  charset: 'token',
  looksLike: 'starts with "AIza" followed by at least 30 letters, digits, "-" or "_"',
};
const LOCAL: KeyFormat = {
  name: 'an API key for this server',
  prefixes: [],
  minBody: 1,
  charset: 'visible',
  looksLike: 'is one word of visible characters',
};

/**
 * The key format a BYOK endpoint expects, by its wire protocol (and, for OpenAI-compatible servers, the
 * flavor behind them).
 *
 * @example
 * ```ts
 * keyFormatOf('openai-compatible', 'gemini-compat').name; // 'a Google (Gemini) API key'
 * ```
 */
export function keyFormatOf(provider: ProviderKind, flavor?: CompatFlavor): KeyFormat {
  switch (provider) {
    case 'openai':
      return OPENAI;
    case 'anthropic':
      return ANTHROPIC;
    case 'gemini':
      return GOOGLE;
    case 'openai-compatible':
      return flavor === 'gemini-compat' ? GOOGLE : LOCAL;
  }
}

const isSpace = (b: number) => b === 0x20 || b === 0x09 || b === 0x0a || b === 0x0d;
const isToken = (b: number) =>
  (b >= 0x30 && b <= 0x39) ||
  (b >= 0x41 && b <= 0x5a) ||
  (b >= 0x61 && b <= 0x7a) ||
  b === 0x2d ||
  b === 0x5f;
const isVisible = (b: number) => b >= 0x21 && b <= 0x7e;

function startsWith(bytes: Uint8Array, prefix: string): boolean {
  if (bytes.length < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (bytes[i] !== prefix.charCodeAt(i)) return false;
  return true;
}

function refuse(message: string): ConfigError {
  return new ConfigError({ source: SOURCE, path: 'key', message: `${message} (it was not kept)` });
}

/**
 * Checks a BYOK key for its provider's format, byte by byte, before anything is sent. Returns the key's
 * bytes without surrounding whitespace (a subarray of `key`, or of an off-heap copy of a string the
 * caller must wipe when `copied` is true). Throws a `ConfigError` at `key` that says what a key of this
 * provider looks like and never contains the key.
 *
 * @example
 * ```ts
 * const { bytes, copied } = checkByokKey(typed, keyFormatOf('openai'));
 * try { seal(bytes); } finally { if (copied) bytes.fill(0); }
 * ```
 */
export function checkByokKey(key: unknown, format: KeyFormat): { bytes: Buffer; copied: boolean } {
  let source: Buffer;
  let copied = false;
  if (typeof key === 'string') {
    source = keyBuffer(Buffer.byteLength(key, 'utf8'));
    source.write(key, 'utf8');
    copied = true;
  } else if (key instanceof Uint8Array) {
    source = Buffer.from(key.buffer, key.byteOffset, key.byteLength);
  } else {
    throw new ConfigError({
      source: SOURCE,
      path: 'key',
      message: 'must be the API key, as a string or bytes',
    });
  }
  let start = 0;
  let end = source.length;
  while (start < end && isSpace(source[start]!)) start++;
  while (end > start && isSpace(source[end - 1]!)) end--;
  const bytes = source.subarray(start, end);
  try {
    if (bytes.length === 0) throw refuse('is empty');
    if (bytes.length > MAX_KEY_BYTES)
      throw refuse(`is ${bytes.length} bytes long; an API key is at most ${MAX_KEY_BYTES}`);
    for (const b of bytes) {
      if (b < 0x20 || b === 0x7f)
        throw refuse('contains a control character; paste the key alone, exactly as the provider shows it');
      if (isSpace(b)) throw refuse('contains a space; paste the key alone');
    }
    const prefix = format.prefixes.find((p) => startsWith(bytes, p));
    const allowed = format.charset === 'token' ? isToken : isVisible;
    const body = prefix === undefined ? bytes : bytes.subarray(prefix.length);
    if (
      (format.prefixes.length > 0 && prefix === undefined) ||
      body.length < format.minBody ||
      !body.every(allowed)
    ) {
      throw refuse(`is not ${format.name}: such a key ${format.looksLike}; check what you pasted`);
    }
    return { bytes, copied };
  } catch (e) {
    if (copied) source.fill(0);
    throw e;
  }
}

const MASK_PREFIXES = ['sk-ant-', 'sk-proj-', 'sk-svcacct-', 'sk-admin-', 'sk-', 'AIza'];

/**
 * The display form of a key held as bytes: its provider prefix, an ellipsis and the last 4 characters
 * (`sk-…a1b2`), the same as `maskSecret` gives for a string. Short keys show no tail.
 *
 * @example
 * ```ts
 * maskKeyBytes(keyBytes); // 'sk-proj-…a1b2'
 * ```
 */
export function maskKeyBytes(bytes: Uint8Array): string {
  const prefix = MASK_PREFIXES.find((p) => startsWith(bytes, p)) ?? '';
  const tail = bytes.length > 12 ? Buffer.from(bytes.subarray(bytes.length - 4)).toString('latin1') : '';
  return `${prefix}…${tail}`;
}
