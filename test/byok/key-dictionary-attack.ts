import { createHash, createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * An offline dictionary attack on what a run let out: for every word of a 1,000-word dictionary, every
 * form a fingerprint of that word could take — the old unsalted `sha256(key)[:8]`, the whole sha256 in hex
 * and base64, and the keyed form `HMAC-SHA256(secret, key)[:8]` under every secret-looking token found in
 * the captured material itself (a salt or secret kept beside the rows would be found there) — is looked
 * for in the captured text. A word whose form is found is recovered.
 */

/** The dictionary (1,000 ordinary lowercase words, one a line). */
export function dictionary(): string[] {
  return readFileSync(join(import.meta.dirname, 'fixtures', 'dictionary-1000.txt'), 'utf8')
    .split('\n')
    .map((w) => w.trim())
    .filter((w) => w !== '');
}

const sha256 = (w: string) => createHash('sha256').update(w).digest();

/** Every 8-char window of every run of lowercase hex in `text` (a fingerprint may sit inside an id). */
function hexWindows(text: string): Set<string> {
  const out = new Set<string>();
  for (const m of text.toLowerCase().matchAll(/[0-9a-f]{8,}/g)) {
    for (let i = 0; i + 8 <= m[0].length; i++) out.add(m[0].slice(i, i + 8));
  }
  return out;
}

/** Tokens that could be a stored secret or salt: long hex runs and base64 runs. */
function secretCandidates(text: string): string[] {
  const out = new Set<string>();
  for (const m of text.matchAll(/[0-9a-fA-F]{32,}/g)) out.add(m[0]);
  // Base64 of random bytes mixes digits and both cases; identifiers and paths do not.
  for (const m of text.matchAll(/[A-Za-z0-9+/_-]{22,}={0,2}/g))
    if (/[0-9]/.test(m[0]) && /[a-z]/.test(m[0]) && /[A-Z]/.test(m[0])) out.add(m[0]);
  return [...out];
}

/**
 * The dictionary words whose fingerprint, in any of the forms above, occurs in `captured`.
 *
 * @example
 * ```ts
 * expect(recoveredWords([`byok:s:t:${sha256hex('vertex').slice(0, 8)}`], ['vertex'])).toEqual(['vertex']);
 * ```
 */
export function recoveredWords(captured: readonly string[], words: readonly string[]): string[] {
  const text = captured.join('\n');
  const windows = hexWindows(text);
  const secrets = secretCandidates(text);
  const found: string[] = [];
  for (const w of words) {
    const digest = sha256(w);
    const hex = digest.toString('hex');
    const plainForms = [hex, digest.toString('base64'), digest.toString('base64url')];
    let hit = windows.has(hex.slice(0, 8)) || plainForms.some((f) => text.includes(f));
    for (let i = 0; !hit && i < secrets.length; i++) {
      const secret = secrets[i]!;
      for (const key of [secret, Buffer.from(secret, 'hex'), Buffer.from(secret, 'base64')]) {
        if (key.length === 0) continue;
        if (windows.has(createHmac('sha256', key).update(w).digest('hex').slice(0, 8))) {
          hit = true;
          break;
        }
      }
    }
    if (hit) found.push(w);
  }
  return found;
}
