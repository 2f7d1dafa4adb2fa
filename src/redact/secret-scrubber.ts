/**
 * Removes secrets from text before it reaches a log line, an error message, a database row or
 * the visualizer feed. Two nets: known key shapes (`sk-…`, `sk-ant-…`, `AIza…`, bearer tokens)
 * and every secret registered at run time, matched verbatim (injected BYOK keys, configured keys).
 */

/** Key shapes providers use. Each match is replaced by a masked form that keeps the last 4 chars. */
const KEY_SHAPES: readonly RegExp[] = [
  // The lookbehind keeps ordinary words such as `risk-assessment-analyst` or `task-review` intact.
  /(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{8,}/g,
  /(?<![A-Za-z0-9_-])sk-(?:proj-|svcacct-)?[A-Za-z0-9_-]{16,}/g,
  /(?<![A-Za-z0-9_-])AIza[0-9A-Za-z_-]{20,}/g,
  /(?<=[Bb]earer\s+)[A-Za-z0-9._~+/-]{16,}=*/g,
];

/**
 * Registered secrets, each with the number of registrations still holding it: when two holders
 * register the same key (a configured key injected again as a BYOK key), one forgetting it must not
 * unmask it for the other.
 */
const registered = new Map<string, number>();

/**
 * Masks a key for display: provider prefix, an ellipsis, the last 4 characters (`sk-…a1b2`).
 *
 * @example
 * ```ts
 * maskSecret('sk-ant-api03-abcdefgh1234'); // 'sk-ant-…1234'
 * ```
 */
export function maskSecret(secret: string): string {
  const prefix = /^(sk-ant-|sk-proj-|sk-|AIza)/.exec(secret)?.[1] ?? '';
  const tail = secret.length > 12 ? secret.slice(-4) : '';
  return `${prefix}…${tail}`;
}

/**
 * Registers a secret so that {@link scrubSecrets} removes it verbatim wherever it appears, even when
 * it has no known shape. Returns a function that forgets it again (once; the secret stays registered
 * while another registration of it is alive).
 */
export function registerSecret(secret: string): () => void {
  if (secret.length < 6) return () => {};
  registered.set(secret, (registered.get(secret) ?? 0) + 1);
  let forgotten = false;
  return () => {
    if (forgotten) return;
    forgotten = true;
    const holders = (registered.get(secret) ?? 1) - 1;
    if (holders > 0) registered.set(secret, holders);
    else registered.delete(secret);
  };
}

/**
 * Returns `text` with every registered secret and every known key shape masked.
 *
 * @example
 * ```ts
 * scrubSecrets('Incorrect API key provided: sk-proj-abcdefghijklmnop1234'); // '… sk-proj-…1234'
 * ```
 */
export function scrubSecrets(text: string): string {
  let out = text;
  for (const secret of registered.keys()) {
    if (out.includes(secret)) out = out.split(secret).join(maskSecret(secret));
  }
  for (const shape of KEY_SHAPES) out = out.replace(shape, (m) => maskSecret(m));
  return out;
}

/** Deep-scrubs a JSON-like value (strings inside objects and arrays). Returns a new value. */
export function scrubValue<T>(value: T): T {
  if (typeof value === 'string') return scrubSecrets(value) as T;
  if (Array.isArray(value)) return value.map((v) => scrubValue(v)) as T;
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = scrubValue(v);
    return out as T;
  }
  return value;
}

/**
 * True when `text` contains a secret registered with {@link registerSecret}. Key shapes are not
 * considered, so a caller can refuse an identifier that carries a real secret instead of masking it
 * (masking an identifier could make two different ids collide).
 *
 * @example
 * ```ts
 * registerSecret('byok-9f8e7d6c5b4a');
 * containsRegisteredSecret('run-byok-9f8e7d6c5b4a'); // true
 * ```
 */
export function containsRegisteredSecret(text: string): boolean {
  for (const secret of registered.keys()) if (text.includes(secret)) return true;
  return false;
}
