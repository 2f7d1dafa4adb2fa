import { JsonCursor } from './json-cursor.ts';

/**
 * What the YAML parser told about a JSON scenario, found in one pass over text `JSON.parse` already
 * accepted: a key given twice in one object (YAML refuses it, JSON.parse keeps the last one silently) and
 * the line of a field path. Reading a 10 MB JSON scenario through the YAML document model took seconds and
 * ~40× the file in memory; this keeps only one set of keys per open object.
 */

/** What {@link scanJson} found. */
export interface JsonScan {
  /** The first key given twice in one object: its path (the key last) and line. */
  readonly duplicate?: { readonly path: (string | number)[]; readonly line: number };
  /** The 1-based line of `target` (of its key, or its list item), or of its nearest existing parent. */
  readonly line?: number;
}

interface Frame {
  readonly kind: 'object' | 'array';
  readonly keys?: Set<string>;
  /** The key or index whose value is read now. */
  at: string | number;
}

/** The walk's state: the objects and arrays open at the cursor, and what was found so far. */
class JsonWalk {
  readonly stack: Frame[] = [];
  #bestDepth = 0;
  bestLine: number | undefined;
  duplicate: JsonScan['duplicate'];

  constructor(
    readonly cur: JsonCursor,
    readonly target: readonly PropertyKey[] | undefined,
  ) {
    this.bestLine = target ? 1 : undefined;
  }

  /** Notes the line of the value or key now read, if its path is a longer prefix of the target. */
  mark(): void {
    const { target, stack } = this;
    if (!target) return;
    const depth = stack.length;
    if (depth <= this.#bestDepth || depth > target.length) return;
    for (let d = 0; d < depth; d++) if (String(stack[d]!.at) !== String(target[d])) return;
    this.#bestDepth = depth;
    this.bestLine = this.cur.line;
  }

  /** Reads an object's key at the cursor and its `:`, noting a duplicate; a value follows. */
  readKey(): void {
    const { cur, stack } = this;
    const top = stack[stack.length - 1]!;
    const keyLine = cur.line;
    const key = cur.readString();
    top.at = key;
    if (top.keys!.has(key)) {
      this.duplicate ??= { path: stack.map((f) => f.at), line: keyLine };
    } else top.keys!.add(key);
    this.mark();
    cur.skipWs();
    if (cur.text[cur.i] !== ':') throw new Error('not JSON');
    cur.i++;
    cur.skipWs();
  }

  /** Reads a value at the cursor: a scalar whole, or an object or array opened. True when a value follows (its first). */
  readValue(): boolean {
    const { cur, stack } = this;
    const c = cur.text[cur.i];
    if (c === '{') {
      cur.i++;
      stack.push({ kind: 'object', keys: new Set(), at: '' });
      cur.skipWs();
      if (cur.text[cur.i] === '}') {
        cur.i++;
        stack.pop();
        return false;
      }
      this.readKey();
      return true;
    }
    if (c === '[') {
      cur.i++;
      stack.push({ kind: 'array', at: 0 });
      cur.skipWs();
      if (cur.text[cur.i] === ']') {
        cur.i++;
        stack.pop();
        return false;
      }
      this.mark();
      return true;
    }
    if (c === '"') cur.readString();
    else cur.readScalar();
    return false;
  }
}

/**
 * Scans valid JSON `text` for a duplicate key and the line of `target`.
 *
 * @example
 * ```ts
 * scanJson('{\n "a": 1,\n "a": 2\n}').duplicate; // { path: ['a'], line: 3 }
 * scanJson('{\n "agents": [\n  {"name": "Kai"}\n ]\n}', ['agents', 0, 'name']).line; // 3
 * ```
 */
export function scanJson(text: string, target?: readonly PropertyKey[]): JsonScan {
  const cur = new JsonCursor(text);
  const walk = new JsonWalk(cur, target);
  const { stack } = walk;
  // Iterative, so nesting depth is bounded by the heap, not the call stack.
  cur.skipWs();
  let expectValue = true;
  while (cur.i < text.length) {
    if (expectValue) {
      expectValue = walk.readValue();
      continue;
    }
    cur.skipWs();
    if (cur.i >= text.length) break;
    const top = stack[stack.length - 1];
    const c = text[cur.i];
    if (!top) break;
    if (c === ',') {
      cur.i++;
      cur.skipWs();
      if (top.kind === 'array') {
        top.at = (top.at as number) + 1;
        walk.mark();
      } else walk.readKey();
      expectValue = true;
      continue;
    }
    if (c === '}' || c === ']') {
      cur.i++;
      stack.pop();
      continue;
    }
    throw new Error('not JSON');
  }
  const { duplicate, bestLine } = walk;
  return { ...(duplicate ? { duplicate } : {}), ...(bestLine !== undefined ? { line: bestLine } : {}) };
}
