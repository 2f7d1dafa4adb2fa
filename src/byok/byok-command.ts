import { ConfigError } from '../errors/config-error.ts';

/**
 * The `/byok PROVIDER KEY` line a user types on stdin, parsed. Malformed lines are refused with a
 * usage message that never repeats what was typed, since any word of it may be the key.
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
 * The usage line shown for a malformed `/byok` command.
 *
 * @example
 * ```ts
 * console.error(BYOK_USAGE); // usage: /byok PROVIDER KEY (e.g. /byok openai sk-…)
 * ```
 */
export const BYOK_USAGE = 'usage: /byok PROVIDER KEY (e.g. /byok openai sk-…)';

const COMMAND = /^\/byok(?=\s|$)/i;
const PROVIDER = /^[a-z][a-z0-9._-]{0,31}$/i;
const MIN_KEY_LENGTH = 8;

function usage(problem: string): ConfigError {
  return new ConfigError({ source: '/byok', path: '', message: `${problem}; ${BYOK_USAGE}` });
}

/** Drops one pair of matching quotes around a word (keys pasted as "sk-…"). */
function unquote(word: string): string {
  const m = /^(["'`])(.*)\1$/s.exec(word);
  return m ? m[2]! : word;
}

/** A word that reads like a provider name rather than a key. */
function isProviderName(word: string): boolean {
  return PROVIDER.test(word) && word.length <= 20;
}

/**
 * Parses one line typed on stdin. Returns `undefined` when the line is not a `/byok` command, the
 * provider (lowercased) and key when it is a well-formed one, and throws a `ConfigError` with a
 * usage message when it is a malformed one. Spaces and tabs around and between the words, a
 * trailing `\r`, and quotes around the key are tolerated. The error message never contains any word
 * of the line.
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
  const text = line.replace(/^\uFEFF/, '').trim();
  if (!COMMAND.test(text)) return undefined;
  const words = text
    .slice('/byok'.length)
    .trim()
    .split(/\s+/)
    .filter((w) => w.length > 0)
    .map(unquote);
  if (words.length === 0) throw usage('needs a provider and a key');
  if (words.length === 1) {
    throw usage(
      isProviderName(words[0]!) ? 'needs the key after the provider' : 'needs the provider before the key',
    );
  }
  if (words.length > 2) throw usage('takes exactly a provider and a key (a key has no spaces)');
  const [provider, key] = words as [string, string];
  if (!isProviderName(provider)) {
    throw usage(
      isProviderName(key)
        ? 'takes the provider first, then the key'
        : 'needs a provider name such as openai, anthropic or gemini first',
    );
  }
  if (/\p{Cc}/u.test(key)) throw usage('the key contains control characters; paste it again');
  if (key.length < MIN_KEY_LENGTH) throw usage('the key is too short to be an API key; paste the whole key');
  return Object.freeze({ provider: provider.toLowerCase(), key });
}
