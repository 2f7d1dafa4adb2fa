/**
 * Text a run cannot carry, found when the scenario (or a flag) is read instead of seconds into the run.
 * Two kinds:
 * - Anywhere: a lone UTF-16 surrogate (a JSON `"\ud800"` or YAML `"\uD800"` escape with no partner) or a
 *   NUL. JSON.stringify writes them as escapes PostgreSQL's jsonb refuses ("invalid input syntax for type
 *   json", "unsupported Unicode escape sequence"), so the first round's commit fails and the run can never
 *   be resumed.
 * - In a name that travels in request headers (agent names, item ids, the run id are parts of every call's
 *   idempotency key): HTTP header values are bytes, so a character above U+00FF cannot be sent at all
 *   ("Cannot convert argument to a ByteString"), a control character is refused by the HTTP layer, and a
 *   long name makes the head too large for the server (431). Latin-1 text (Müller, Café) goes through.
 */

/** Longest name that travels in request headers (agent name, item id, run id). */
export const MAX_WIRE_NAME_LENGTH = 200;

const u = (code: number) => `U+${code.toString(16).toUpperCase().padStart(4, '0')}`;

/**
 * What is wrong with a string a run must store, or `undefined`.
 *
 * @example
 * ```ts
 * storableTextProblem('ok'); // undefined
 * storableTextProblem('bad \ud800'); // 'holds a lone UTF-16 surrogate (U+D800) at character 5; …'
 * ```
 */
export function storableTextProblem(text: string): string | undefined {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0)
      return `holds a NUL character (U+0000) at character ${i + 1}; remove it (the store cannot keep it)`;
    if (c >= 0xd800 && c <= 0xdbff) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        i++;
        continue;
      }
    }
    if (c >= 0xd800 && c <= 0xdfff)
      return `holds a lone UTF-16 surrogate (${u(c)}) at character ${i + 1}, which is not text; remove the \\u${c.toString(16)} escape or give the whole character`;
  }
  return undefined;
}

/**
 * The first string (value or mapping key) under `value` that a run cannot store: its path and what is
 * wrong; `undefined` when there is none.
 *
 * @example
 * ```ts
 * findUnstorableText({ rounds: { items: [{ title: 'x\ud800' }] } });
 * // { path: ['rounds', 'items', 0, 'title'], message: 'holds a lone UTF-16 surrogate …' }
 * ```
 */
export function findUnstorableText(
  value: unknown,
  path: (string | number)[] = [],
): { path: (string | number)[]; message: string } | undefined {
  if (typeof value === 'string') {
    const message = storableTextProblem(value);
    return message ? { path, message } : undefined;
  }
  if (value === null || typeof value !== 'object') return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const found = findUnstorableText(value[i], [...path, i]);
      if (found) return found;
    }
    return undefined;
  }
  for (const [key, inner] of Object.entries(value)) {
    const keyProblem = storableTextProblem(key);
    if (keyProblem) return { path: [...path, key], message: `(the field name) ${keyProblem}` };
    const found = findUnstorableText(inner, [...path, key]);
    if (found) return found;
  }
  return undefined;
}

/**
 * What is wrong with a name that travels in request headers (agent name, item id, run id), or
 * `undefined`: it must be 1–200 printable Latin-1 characters.
 *
 * @example
 * ```ts
 * wireNameProblem('Kai Müller'); // undefined
 * wireNameProblem('小林'); // 'has "小" (U+5C0F), which cannot travel in a request header; …'
 * ```
 */
export function wireNameProblem(name: string): string | undefined {
  if (name.length === 0) return 'must not be empty';
  if (name.length > MAX_WIRE_NAME_LENGTH)
    return `is ${name.length} characters long; at most ${MAX_WIRE_NAME_LENGTH} (it travels in every call's request headers)`;
  for (const ch of name) {
    const c = ch.codePointAt(0)!;
    if ((c >= 0x20 && c <= 0x7e) || (c >= 0xa0 && c <= 0xff)) continue;
    const shown = c < 0x20 || (c >= 0x7f && c < 0xa0) || (c >= 0xd800 && c <= 0xdfff) ? '' : `"${ch}" `;
    return `has ${shown}(${u(c)}), which cannot travel in a request header (it is part of every call's idempotency key); use Latin-1 letters, digits, spaces and punctuation`;
  }
  return undefined;
}
