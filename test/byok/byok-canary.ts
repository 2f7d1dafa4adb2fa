import { createHash } from 'node:crypto';

/**
 * Canary keys for the leak tests. A canary is derived from a seed so the child process that holds it
 * never receives it on its command line or environment (both stay in its heap); it is built from one
 * buffer so V8 stores it as one flat string (a concatenation would show up in a heap snapshot as two
 * halves and never match).
 */

/** Providers the canary scenario injects a key for. */
export const CANARY_PROVIDERS = ['openai', 'anthropic', 'gemini'] as const;
export type CanaryProvider = (typeof CANARY_PROVIDERS)[number];

/** The canary key of one provider (`good`) or the one the emulator does not know (`bad`). */
export function canaryKey(seed: string, provider: CanaryProvider, kind: 'good' | 'bad' = 'good'): string {
  const hex = createHash('sha256').update(`${seed}/${provider}/${kind}`).digest('hex').slice(0, 40);
  return Buffer.from(`sk-canary-${kind}-${hex}`, 'latin1').toString('latin1');
}

/** Emulator alias of a canary key, as `stats().calls[].key` reports it. */
export function canaryAlias(provider: CanaryProvider): string {
  return `canary-${provider}`;
}
