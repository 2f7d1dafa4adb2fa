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
  let line = 1;
  let i = 0;
  const stack: Frame[] = [];
  let bestDepth = 0;
  let bestLine: number | undefined = target ? 1 : undefined;
  let duplicate: JsonScan['duplicate'];

  const skipWs = () => {
    for (;;) {
      const c = text.charCodeAt(i);
      if (c === 10) line++;
      else if (c !== 32 && c !== 9 && c !== 13) return;
      i++;
    }
  };
  /** Reads a string token at `i` (which is `"`), returns its value. */
  const readString = (): string => {
    let end = i + 1;
    let escaped = false;
    for (; end < text.length; end++) {
      const c = text.charCodeAt(end);
      if (escaped) escaped = false;
      else if (c === 92) escaped = true;
      else if (c === 34) break;
    }
    const raw = text.slice(i, end + 1);
    i = end + 1;
    return JSON.parse(raw) as string;
  };
  /** Notes the line of the value or key now read, if its path is a longer prefix of the target. */
  const mark = () => {
    if (!target) return;
    const depth = stack.length;
    if (depth <= bestDepth || depth > target.length) return;
    for (let d = 0; d < depth; d++) if (String(stack[d]!.at) !== String(target[d])) return;
    bestDepth = depth;
    bestLine = line;
  };

  const readScalar = () => {
    const start = i;
    while (i < text.length && !',]}'.includes(text[i]!) && !/\s/.test(text[i]!)) i++;
    if (i === start) throw new Error('not JSON');
  };

  // Iterative, so nesting depth is bounded by the heap, not the call stack.
  skipWs();
  let expectValue = true;
  while (i < text.length) {
    if (expectValue) {
      const c = text[i];
      if (c === '{') {
        i++;
        stack.push({ kind: 'object', keys: new Set(), at: '' });
        skipWs();
        if (text[i] === '}') {
          i++;
          stack.pop();
          expectValue = false;
        } else {
          readKey();
        }
        continue;
      }
      if (c === '[') {
        i++;
        const frame: Frame = { kind: 'array', at: 0 };
        stack.push(frame);
        skipWs();
        if (text[i] === ']') {
          i++;
          stack.pop();
          expectValue = false;
        } else mark();
        continue;
      }
      if (c === '"') readString();
      else readScalar();
      expectValue = false;
      continue;
    }
    skipWs();
    if (i >= text.length) break;
    const top = stack[stack.length - 1];
    const c = text[i];
    if (!top) break;
    if (c === ',') {
      i++;
      skipWs();
      if (top.kind === 'array') {
        top.at = (top.at as number) + 1;
        mark();
        expectValue = true;
      } else readKey();
      continue;
    }
    if (c === '}' || c === ']') {
      i++;
      stack.pop();
      continue;
    }
    throw new Error('not JSON');
  }
  return { ...(duplicate ? { duplicate } : {}), ...(bestLine !== undefined ? { line: bestLine } : {}) };

  function readKey(): void {
    const top = stack[stack.length - 1]!;
    const keyLine = line;
    const key = readString();
    top.at = key;
    if (top.keys!.has(key)) {
      duplicate ??= { path: stack.map((f) => f.at), line: keyLine };
    } else top.keys!.add(key);
    mark();
    skipWs();
    if (text[i] !== ':') throw new Error('not JSON');
    i++;
    skipWs();
    expectValue = true;
  }
}
