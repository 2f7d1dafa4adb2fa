import { createHash } from 'node:crypto';

/**
 * Canary keys for the leak tests, one per provider in that provider's format. A canary is derived from a
 * seed, so the child process that holds it never receives it on its command line or in its environment;
 * and the child builds it as bytes ({@link canaryKeyBytes}), so no string of it exists there unless the
 * code under test makes one. The parent uses the string form ({@link canaryKey}) to search for it.
 */

/** Providers the canary scenario injects a key for. */
export const CANARY_PROVIDERS = ['openai', 'anthropic', 'gemini'] as const;
export type CanaryProvider = (typeof CANARY_PROVIDERS)[number];

const PREFIX: Record<CanaryProvider, string> = {
  openai: 'sk-proj-canary',
  anthropic: 'sk-ant-api03-canary',
  gemini: 'AIzaCanary',
};

/**
 * The canary key of one provider (`good`) or the one the emulator does not know (`bad`), as bytes in an
 * off-heap buffer the caller wipes.
 */
export function canaryKeyBytes(
  seed: string,
  provider: CanaryProvider,
  kind: 'good' | 'bad' = 'good',
): Buffer {
  const digest = createHash('sha256').update(`${seed}/${provider}/${kind}`).digest();
  const head = `${PREFIX[provider]}${kind === 'good' ? 'G' : 'B'}`;
  const length = head.length + 40;
  const out = Buffer.alloc(128).subarray(0, length);
  for (let i = 0; i < head.length; i++) out[i] = head.charCodeAt(i);
  // 40 hex digits, written as bytes: no hex string of the digest is ever made.
  for (let i = 0; i < 20; i++) {
    const b = digest[i]!;
    out[head.length + 2 * i] = '0123456789abcdef'.charCodeAt(b >> 4);
    out[head.length + 2 * i + 1] = '0123456789abcdef'.charCodeAt(b & 15);
  }
  digest.fill(0);
  return out;
}

/** The same canary as a string, for the side that searches (never called where the key must not be). */
export function canaryKey(seed: string, provider: CanaryProvider, kind: 'good' | 'bad' = 'good'): string {
  const bytes = canaryKeyBytes(seed, provider, kind);
  const text = bytes.toString('latin1');
  bytes.fill(0);
  return text;
}

/** Emulator alias of a canary key, as `stats().calls[].key` reports it. */
export function canaryAlias(provider: CanaryProvider): string {
  return `canary-${provider}`;
}
