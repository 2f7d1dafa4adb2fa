import { readFileSync } from 'node:fs';
import { keyTexts } from '../support/key-forms.ts';

/**
 * Reads a V8 `.heapsnapshot` and finds where a key is held, with the chain of objects that keeps each
 * copy alive — so a leak names its retainer instead of just failing. Strings are compared decoded (a
 * snapshot writes non-ASCII characters as `\uXXXX`), a key split in two strings is found by its halves,
 * and a key kept as an array of one-character strings is found by spelling the array out. What a snapshot
 * cannot show (bytes in a Buffer or typed array, char codes as small integers) is the raw-memory scan's
 * job (`test/support/process-memory.ts`).
 */

interface SnapshotJson {
  snapshot: {
    meta: {
      node_fields: string[];
      node_types: [string[], ...unknown[]];
      edge_fields: string[];
      edge_types: [string[], ...unknown[]];
    };
  };
  nodes: number[];
  edges: number[];
  strings: string[];
}

/** One node holding the key (or half of it) and how it is reached from a GC root. */
export interface HeapHit {
  readonly type: string;
  /** `string` (the node's text holds it) or `char array` (an array of one-character strings spells it). */
  readonly kind: 'string' | 'char array';
  /** The node's text, cut around the match, the match replaced by `<KEY>`. */
  readonly excerpt: string;
  /** Retainer chain from the hit outwards, e.g. `string <-[2]- (object elements) <-[registered]- Map`. */
  readonly retainers: readonly string[];
}

const STRING_TYPES = new Set(['string', 'concatenated string', 'sliced string']);

/**
 * Nodes of the snapshot that hold `key` or one of its halves — as a string, or as an array of
 * one-character strings — each with its shortest strong retainer path from the GC roots (up to
 * `maxDepth` steps), innermost first.
 *
 * @example
 * ```ts
 * const hits = findKeyInSnapshot(writeHeapSnapshot(), key);
 * expect(hits.map((h) => h.retainers.join(' '))).toEqual([]);
 * ```
 */
export function findKeyInSnapshot(path: string, key: string, maxDepth = 40): HeapHit[] {
  const snap = JSON.parse(readFileSync(path, 'utf8')) as SnapshotJson;
  const { meta } = snap.snapshot;
  const nf = meta.node_fields.length;
  const ef = meta.edge_fields.length;
  const nType = meta.node_fields.indexOf('type');
  const nName = meta.node_fields.indexOf('name');
  const nEdges = meta.node_fields.indexOf('edge_count');
  const eType = meta.edge_fields.indexOf('type');
  const eName = meta.edge_fields.indexOf('name_or_index');
  const eTo = meta.edge_fields.indexOf('to_node');
  const nodeTypes = meta.node_types[0];
  const edgeTypes = meta.edge_types[0];
  const { nodes, edges, strings } = snap;
  const nodeCount = nodes.length / nf;
  const needles = keyTexts(key);

  const firstEdge = new Int32Array(nodeCount);
  for (let n = 0, e = 0; n < nodeCount; n++) {
    firstEdge[n] = e;
    e += nodes[n * nf + nEdges]! * ef;
  }
  const typeOf = (n: number) => nodeTypes[nodes[n * nf + nType]!] ?? '?';
  const nameOf = (n: number) => strings[nodes[n * nf + nName]!] ?? '';

  // Shortest strong path from the root (node 0) to every node: what really keeps a node alive.
  const parentNode = new Int32Array(nodeCount).fill(-1);
  const parentEdge = new Int32Array(nodeCount).fill(-1);
  const queue = new Int32Array(nodeCount);
  let head = 0;
  let tail = 0;
  queue[tail++] = 0;
  parentNode[0] = 0;
  while (head < tail) {
    const n = queue[head++]!;
    const count = nodes[n * nf + nEdges]!;
    for (let i = 0, e = firstEdge[n]!; i < count; i++, e += ef) {
      if (edgeTypes[edges[e + eType]!] === 'weak') continue;
      const to = edges[e + eTo]! / nf;
      if (parentNode[to] !== -1) continue;
      parentNode[to] = n;
      parentEdge[to] = e;
      queue[tail++] = to;
    }
  }
  const describeNode = (n: number) => `${typeOf(n)} ${JSON.stringify(nameOf(n).slice(0, 60))}`;
  const describeEdge = (e: number) => {
    const type = edgeTypes[edges[e + eType]!] ?? '?';
    const raw = edges[e + eName]!;
    const name = type === 'element' || type === 'hidden' ? String(raw) : (strings[raw] ?? String(raw));
    return `${type}:${name}`;
  };
  const retainersOf = (n: number): string[] => {
    const chain: string[] = [describeNode(n)];
    if (parentNode[n] === -1) chain.push('(unreachable: only weak retainers)');
    for (let current = n; current !== 0 && parentNode[current]! >= 0 && chain.length <= maxDepth; ) {
      const from = parentNode[current]!;
      chain.push(`<-[${describeEdge(parentEdge[current]!)}]- ${describeNode(from)}`);
      current = from;
    }
    return chain;
  };
  const excerptOf = (text: string, at: number, needle: string) =>
    `${text.slice(Math.max(0, at - 40), at)}<KEY>${text.slice(at + needle.length, at + needle.length + 40)}`;

  const hits: HeapHit[] = [];
  for (let n = 0; n < nodeCount; n++) {
    const type = typeOf(n);
    if (STRING_TYPES.has(type)) {
      const name = nameOf(n);
      const needle = needles.find((k) => name.includes(k));
      if (needle) {
        hits.push({
          type,
          kind: 'string',
          excerpt: excerptOf(name, name.indexOf(needle), needle),
          retainers: retainersOf(n),
        });
      }
      continue;
    }
    // An array's element edges, in index order, each to a one-character string: spell them out.
    const count = nodes[n * nf + nEdges]!;
    if (count < 10) continue;
    let spelled = '';
    for (let i = 0, e = firstEdge[n]!; i < count; i++, e += ef) {
      if (edgeTypes[edges[e + eType]!] !== 'element') continue;
      const to = edges[e + eTo]! / nf;
      const text = STRING_TYPES.has(typeOf(to)) ? nameOf(to) : '';
      spelled += text.length === 1 ? text : '\u0000';
    }
    const needle = needles.find((k) => spelled.includes(k));
    if (needle) {
      hits.push({
        type,
        kind: 'char array',
        excerpt: excerptOf(spelled, spelled.indexOf(needle), needle),
        retainers: retainersOf(n),
      });
    }
  }
  return hits;
}

/**
 * A readable account of the hits: one block per copy with its retainer chain, so a failing test says
 * what holds the key.
 *
 * @example
 * ```ts
 * expect(hits, leakReport(hits)).toEqual([]);
 * ```
 */
export function leakReport(hits: readonly HeapHit[]): string {
  return hits
    .map((h) => `${h.kind} (${h.type}) …${h.excerpt}…\n    ${h.retainers.join('\n    ')}`)
    .join('\n');
}
