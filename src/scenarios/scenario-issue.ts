import type { z } from 'zod';
import { type Document, isMap, isScalar, isSeq, type LineCounter } from 'yaml';

/** A zod issue said for a person: the field path and what to do about it. */
export interface IssueText {
  readonly path: readonly PropertyKey[];
  readonly message: string;
}

/**
 * A zod path as a person writes it.
 *
 * @example
 * ```ts
 * formatPath(['agents', 3, 'chain']); // 'agents[3].chain'
 * formatPath(['emulator', 'keys', 0, 'quotas', 'models', 'gemini-2.5-flash']); // 'emulator.keys[0].quotas.models["gemini-2.5-flash"]'
 * ```
 */
export function formatPath(path: readonly PropertyKey[]): string {
  let out = '';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else if (/^[A-Za-z_][\w-]*$/.test(String(p))) out += out ? `.${String(p)}` : String(p);
    else out += `[${JSON.stringify(String(p))}]`;
  }
  return out;
}

function valueAt(root: unknown, path: readonly PropertyKey[]): unknown {
  let v = root;
  for (const p of path) {
    if (v === null || typeof v !== 'object') return undefined;
    v = (v as Record<PropertyKey, unknown>)[p];
  }
  return v;
}

type AnySchema = { _zod: { def: Record<string, unknown> & { type: string } } };

/** The fields a zod object at `path` of `schema` accepts (for "did you mean"). */
function knownKeys(schema: AnySchema, path: readonly PropertyKey[]): string[] {
  let s: AnySchema | undefined = schema;
  let i = 0;
  while (s) {
    const def: AnySchema['_zod']['def'] = s._zod.def;
    if (
      def.type === 'optional' ||
      def.type === 'default' ||
      def.type === 'nullable' ||
      def.type === 'prefault'
    )
      s = def.innerType as AnySchema;
    else if (def.type === 'pipe') s = def.in as AnySchema;
    else if (i === path.length) return def.type === 'object' ? Object.keys(def.shape as object) : [];
    else if (def.type === 'object') s = (def.shape as Record<string, AnySchema>)[String(path[i++])];
    else if (def.type === 'array') {
      s = def.element as AnySchema;
      i++;
    } else if (def.type === 'record') {
      s = def.valueType as AnySchema;
      i++;
    } else return [];
  }
  return [];
}

function distance(a: string, b: string): number {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!;
    row[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!;
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = cur;
    }
  }
  return row[b.length]!;
}

function suggestion(key: string, known: readonly string[]): string {
  let best: string | undefined;
  let bestD = Number.POSITIVE_INFINITY;
  for (const k of known) {
    const d = distance(key.toLowerCase(), k.toLowerCase());
    if (d < bestD) {
      best = k;
      bestD = d;
    }
  }
  if (best && bestD <= Math.max(2, Math.floor(key.length / 3))) return `did you mean "${best}"? `;
  return known.length > 0 ? `known fields: ${known.join(', ')}; ` : '';
}

const article = (t: string) => (/^[aeiou]/.test(t) ? `an ${t}` : `a ${t}`);
const kind = (t: string) => (t === 'array' ? 'a list' : t === 'object' ? 'a mapping' : article(t));

/**
 * Says one zod issue of a scenario for a person: the field and what to do. `input` is the parsed
 * file (to tell a missing field from a wrong one); `schema` names the known fields of a mapping so a
 * typo gets a "did you mean".
 *
 * @example
 * ```ts
 * const parsed = scenarioSchema.safeParse(value);
 * if (!parsed.success) describeIssue(parsed.error.issues[0]!, value, scenarioSchema);
 * // { path: ['agents', 1, 'chian'], message: 'is not a known field; did you mean "chain"? remove it or fix its spelling' }
 * ```
 */
export function describeIssue(issue: z.core.$ZodIssue, input: unknown, schema: unknown): IssueText {
  const path = issue.path;
  switch (issue.code) {
    case 'unrecognized_keys': {
      const key = String(issue.keys[0] ?? '');
      const hint = suggestion(key, knownKeys(schema as AnySchema, path));
      return { path: [...path, key], message: `is not a known field; ${hint}remove it or fix its spelling` };
    }
    case 'invalid_type': {
      const missing = valueAt(input, path) === undefined;
      return {
        path,
        message: missing ? `is required (${kind(issue.expected)})` : `must be ${kind(issue.expected)}`,
      };
    }
    case 'invalid_value':
      return { path, message: `must be one of ${issue.values.map((v) => String(v)).join(', ')}` };
    case 'too_small': {
      const n = Number(issue.minimum);
      if (issue.origin === 'array')
        return { path, message: `must list at least ${n} entr${n === 1 ? 'y' : 'ies'}` };
      if (issue.origin === 'string') return { path, message: 'must not be empty' };
      return {
        path,
        message: issue.inclusive === false ? `must be greater than ${n}` : `must be at least ${n}`,
      };
    }
    case 'too_big':
      // A bound from src/config/bounds.ts says itself, with its unit and the value given.
      return {
        path,
        message:
          issue.message && !/^Too big/i.test(issue.message)
            ? issue.message
            : `must be at most ${String(issue.maximum)}`,
      };
    case 'invalid_format':
      // A pattern is the schema's own rule: its message says it for a person ("must be letters, digits…");
      // zod's default ("Invalid string: must match pattern /…/") is replaced by a plainer one.
      if (issue.format === 'regex')
        return {
          path,
          message:
            issue.message && !/^Invalid string/i.test(issue.message)
              ? issue.message
              : `must match the pattern ${String((issue as { pattern?: unknown }).pattern ?? '')}`.trim(),
        };
      return { path, message: `must be a valid ${issue.format === 'url' ? 'http(s) URL' : issue.format}` };
    default:
      return { path, message: issue.message };
  }
}

/**
 * The 1-based line of the YAML (or JSON) node at `path`: the line of the key for a mapping field, of
 * the item for a list entry; the nearest existing parent's line when the field itself is missing.
 *
 * @example
 * ```ts
 * const counter = new LineCounter();
 * const doc = parseDocument(text, { lineCounter: counter });
 * lineOf(doc, counter, ['agents', 3, 'chain']); // 42
 * ```
 */
export function lineOf(
  doc: Document,
  counter: LineCounter,
  path: readonly PropertyKey[],
): number | undefined {
  let node: unknown = doc.contents;
  let offset = (node as { range?: [number] } | null)?.range?.[0];
  for (const seg of path) {
    if (isMap(node)) {
      const pair = node.items.find((p) => String(isScalar(p.key) ? p.key.value : p.key) === String(seg));
      if (!pair) break;
      offset = (pair.key as { range?: [number] } | null)?.range?.[0] ?? offset;
      node = pair.value;
    } else if (isSeq(node) && typeof seg === 'number') {
      const item = node.items[seg];
      if (item === undefined) break;
      offset = (item as { range?: [number] } | null)?.range?.[0] ?? offset;
      node = item;
    } else break;
  }
  return offset === undefined ? undefined : counter.linePos(offset).line;
}
