import { createHmac, randomBytes } from 'node:crypto';

/**
 * How a key is named where it may be seen (logs, rows, events, pages, endpoint ids, upstream ids): an
 * HMAC-SHA256 of its bytes under a secret made at random when this process starts and never written,
 * sent or exported. A plain `sha256(key)` would let anyone who reads a fingerprint test a dictionary of
 * candidate keys offline (a word key falls in a fraction of a second); with the secret out of reach,
 * 8 hex chars say nothing about the key.
 *
 * Why a process secret and not one kept per store: nothing that outlives the process needs the same
 * fingerprint again. Keys are never stored (BYOK keys are re-typed after a restart, configured keys are
 * re-read from the environment), so a resumed run cannot and need not match an old fingerprint to a key;
 * a secret kept beside the rows would hand the dictionary attack back to whoever holds the database.
 * Within one process the same key keeps the same fingerprint, which is all identity needs (a re-injected
 * key lands on the same endpoint, two endpoints on one key show one fingerprint).
 */
const PROCESS_SECRET = randomBytes(32);

/**
 * First 8 hex chars of HMAC-SHA256(process secret, key), or `none` without a key. Safe to log and
 * persist; stable within this process only.
 *
 * @example
 * ```ts
 * keyedFingerprint(keyBytes); // e.g. '9c41e07a', another value in another process
 * keyedFingerprint(undefined); // 'none'
 * ```
 */
export function keyedFingerprint(key: string | Uint8Array | undefined): string {
  if (key === undefined || key.length === 0) return 'none';
  return createHmac('sha256', PROCESS_SECRET).update(key).digest('hex').slice(0, 8);
}
