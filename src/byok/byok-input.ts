import { ConfigError } from '../errors/config-error.ts';

/**
 * Checks of what a user hands the vault. No message ever contains the key: only its length or what
 * is wrong with it.
 */

const SOURCE = 'byok';
const MIN_KEY_LENGTH = 8;
const MAX_KEY_LENGTH = 1024;

/**
 * A positive, finite number of ms, else a `ConfigError` at `path`.
 *
 * @example
 * ```ts
 * positiveMs(options.idleTtlMs ?? 7_200_000, 'idleTtlMs');
 * ```
 */
export function positiveMs(value: unknown, path: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value <= 0) {
    throw new ConfigError({ source: SOURCE, path, message: 'must be a positive number of milliseconds' });
  }
  return value;
}

/**
 * The key trimmed (a pasted key often carries a newline), else a `ConfigError` at `key`.
 *
 * @example
 * ```ts
 * checkByokKey('sk-proj-abc123def456\n', 'tty-1'); // 'sk-proj-abc123def456'
 * ```
 */
export function checkByokKey(key: unknown, sessionId: string): string {
  if (typeof key !== 'string') {
    throw new ConfigError({ source: SOURCE, path: 'key', message: 'must be the API key as a string' });
  }
  const trimmed = key.trim();
  if (trimmed.length === 0) throw new ConfigError({ source: SOURCE, path: 'key', message: 'is empty' });
  // The key itself never appears in these messages: only its length or what is wrong with it.
  if (/[\s\p{Cc}]/u.test(trimmed)) {
    throw new ConfigError({
      source: SOURCE,
      path: 'key',
      message: 'contains spaces or control characters; paste the key alone (it was not stored)',
    });
  }
  if (trimmed.length < MIN_KEY_LENGTH || trimmed.length > MAX_KEY_LENGTH) {
    throw new ConfigError({
      source: SOURCE,
      path: 'key',
      message: `is ${trimmed.length} characters long, which is not an API key; paste the whole key (it was not stored)`,
    });
  }
  if (sessionId.includes(trimmed)) {
    throw new ConfigError({ source: SOURCE, path: 'sessionId', message: 'must not contain the key' });
  }
  return trimmed;
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
  if (typeof sessionId !== 'string' || sessionId.length === 0) {
    throw new ConfigError({ source: SOURCE, path: 'sessionId', message: 'must be a non-empty string' });
  }
  return sessionId;
}
