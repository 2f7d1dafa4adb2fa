import { ConfigError } from '../core/errors/config-error.ts';

/**
 * The `/byok PROVIDER KEY` line a user types on stdin, parsed from its bytes: the key is never turned
 * into a string, and malformed lines are refused with a usage message that never repeats what was
 * typed, since any word of it may be the key.
 */

/**
 * A parsed `/byok` command: the provider name (lowercased) and the key.
 *
 * @example
 * ```ts
 * const cmd: ByokCommand = { provider: 'openai', key: 'sk-proj-…' };
 * ```
 */
export interface ByokCommand {
  readonly provider: string;
  readonly key: string;
}

/**
 * A parsed `/byok` line whose key is still bytes: a view into the line's buffer (copy or use it before
 * the line buffer is wiped).
 *
 * @example
 * ```ts
 * const cmd = parseByokLine(lineBytes);
 * if (cmd) vault.inject(session, cmd.provider, cmd.key).finally(() => lineBytes.fill(0));
 * ```
 */
export interface ByokLine {
  readonly provider: string;
  readonly key: Buffer;
}

/**
 * The usage line shown for a malformed `/byok` command.
 *
 * @example
 * ```ts
 * console.error(BYOK_USAGE); // usage: /byok PROVIDER KEY (e.g. /byok openai sk-…)
 * ```
 */
export const BYOK_USAGE = 'usage: /byok PROVIDER KEY (e.g. /byok openai sk-…)';

const MAX_PROVIDER = 20;

function usage(problem: string): ConfigError {
  return new ConfigError({ source: '/byok', path: '', message: `${problem}; ${BYOK_USAGE}` });
}

const isBlank = (b: number) => b === 0x20 || b === 0x09;
const isLineEnd = (b: number) => b === 0x0a || b === 0x0d;
const isQuote = (b: number) => b === 0x22 || b === 0x27 || b === 0x60;
const isLower = (b: number) => b >= 0x61 && b <= 0x7a;
const isUpper = (b: number) => b >= 0x41 && b <= 0x5a;
const isDigit = (b: number) => b >= 0x30 && b <= 0x39;

/** A word that reads like a provider name (a letter, then letters, digits, `.`, `_`, `-`; max 20). */
function isProviderName(word: Uint8Array): boolean {
  if (word.length === 0 || word.length > MAX_PROVIDER) return false;
  if (!isLower(word[0]!) && !isUpper(word[0]!)) return false;
  return word.every((b) => isLower(b) || isUpper(b) || isDigit(b) || b === 0x2e || b === 0x5f || b === 0x2d);
}

/** Drops one pair of matching quotes around a word (keys pasted as "sk-…"). */
function unquote(word: Buffer): Buffer {
  if (word.length >= 2 && isQuote(word[0]!) && word[word.length - 1] === word[0]) {
    return word.subarray(1, word.length - 1);
  }
  return word;
}

const COMMAND = [0x2f, 0x62, 0x79, 0x6f, 0x6b]; // "/byok", matched case-insensitively

/**
 * Parses one line, as bytes. Returns `undefined` when the line is not a `/byok` command; the provider
 * (lowercased) and the key (a view of `line`) when it is a well-formed one; throws a `ConfigError` with a
 * usage message when it is a malformed one. Spaces and tabs around and between the words, a trailing
 * CR/LF, a leading BOM and quotes around the key are tolerated; any other control byte is refused (never
 * silently dropped, which would change the key). The error message never contains any word of the line.
 *
 * @example
 * ```ts
 * parseByokLine(Buffer.from('/byok OpenAI sk-proj-abc123def456\r\n')); // { provider: 'openai', key: <Buffer …> }
 * parseByokLine(Buffer.from('hello agents'));                          // undefined
 * ```
 */
export function parseByokLine(line: Uint8Array): ByokLine | undefined {
  let bytes = Buffer.from(line.buffer, line.byteOffset, line.byteLength);
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3);
  let start = 0;
  let end = bytes.length;
  while (start < end && isBlank(bytes[start]!)) start++;
  while (end > start && (isBlank(bytes[end - 1]!) || isLineEnd(bytes[end - 1]!))) end--;
  bytes = bytes.subarray(start, end);
  if (bytes.length < COMMAND.length) return undefined;
  for (let i = 0; i < COMMAND.length; i++) {
    const b = bytes[i]!;
    if (b !== COMMAND[i] && b !== COMMAND[i]! - 0x20) return undefined;
  }
  if (bytes.length > COMMAND.length && !isBlank(bytes[COMMAND.length]!)) return undefined;
  for (const b of bytes) {
    if ((b < 0x20 && b !== 0x09) || b === 0x7f)
      throw usage(
        'the line contains a control character, so nothing was kept (it is refused, not stripped); paste the key alone',
      );
  }
  const words: Buffer[] = [];
  for (let i = COMMAND.length; i < bytes.length; ) {
    while (i < bytes.length && isBlank(bytes[i]!)) i++;
    const from = i;
    while (i < bytes.length && !isBlank(bytes[i]!)) i++;
    if (i > from) words.push(unquote(bytes.subarray(from, i)));
  }
  if (words.length === 0) throw usage('needs a provider and a key');
  if (words.length === 1) {
    throw usage(
      isProviderName(words[0]!) ? 'needs the key after the provider' : 'needs the provider before the key',
    );
  }
  if (words.length > 2) throw usage('takes exactly a provider and a key (a key has no spaces)');
  const [provider, key] = words as [Buffer, Buffer];
  if (!isProviderName(provider)) {
    throw usage(
      isProviderName(key)
        ? 'takes the provider first, then the key'
        : 'needs a provider name such as openai, anthropic or gemini first',
    );
  }
  if (key.length === 0) throw usage('needs the key after the provider');
  return Object.freeze({ provider: provider.toString('latin1').toLowerCase(), key });
}

/**
 * Parses one line typed on stdin, as a string (for embedders holding one; the CLI parses bytes with
 * {@link parseByokLine}). Same rules and messages.
 *
 * @example
 * ```ts
 * parseByokCommand('  /byok   OpenAI  sk-proj-abc123def456 \r'); // { provider: 'openai', key: 'sk-proj-abc123def456' }
 * parseByokCommand('hello agents');                               // undefined
 * parseByokCommand('/byok sk-proj-abc123def456');                 // throws: "/byok: needs the provider before the key; usage: …"
 * ```
 */
export function parseByokCommand(line: string): ByokCommand | undefined {
  if (typeof line !== 'string') return undefined;
  const parsed = parseByokLine(Buffer.from(line, 'utf8'));
  return parsed ? Object.freeze({ provider: parsed.provider, key: parsed.key.toString('utf8') }) : undefined;
}
