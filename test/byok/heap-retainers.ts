import { readFileSync } from 'node:fs';

/**
 * Reads a V8 `.heapsnapshot` and finds the string nodes containing a needle, with the chain of
 * objects that keeps each alive — so a leak names its retainer instead of just failing.
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

/** One string node holding the needle and how it is reached from a GC root. */
export interface HeapHit {
  readonly type: string;
  /** The node's text, cut around the needle. */
  readonly excerpt: string;
  /** Retainer chain from the hit outwards, e.g. `string <-[2]- (object elements) <-[registered]- Map`. */
  readonly retainers: readonly string[];
}

const STRING_TYPES = new Set(['string', 'concatenated string', 'sliced string']);

/** Counts occurrences of `needle` in the raw snapshot text (strings are stored JSON-escaped; canaries need none). */
export function countInSnapshot(path: string, needle: string): number {
  const text = readFileSync(path, 'utf8');
  let count = 0;
  for (let at = text.indexOf(needle); at >= 0; at = text.indexOf(needle, at + needle.length)) count++;
  return count;
}

/**
 * String nodes of the snapshot whose text contains `needle`, each with its shortest strong retainer
 * path from the GC roots (up to `maxDepth` steps), innermost first.
 */
export function findRetainers(path: string, needle: string, maxDepth = 40): HeapHit[] {
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

  // Shortest strong path from the root (node 0) to every node: what really keeps a node alive.
  const parentNode = new Int32Array(nodeCount).fill(-1);
  const parentEdge = new Int32Array(nodeCount).fill(-1);
  const firstEdge = new Int32Array(nodeCount);
  for (let n = 0, e = 0; n < nodeCount; n++) {
    firstEdge[n] = e;
    e += nodes[n * nf + nEdges]! * ef;
  }
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
  const describeNode = (n: number) => {
    const type = nodeTypes[nodes[n * nf + nType]!] ?? '?';
    const name = strings[nodes[n * nf + nName]!] ?? '';
    return `${type} ${JSON.stringify(name.slice(0, 60))}`;
  };
  const describeEdge = (e: number) => {
    const type = edgeTypes[edges[e + eType]!] ?? '?';
    const raw = edges[e + eName]!;
    const name = type === 'element' || type === 'hidden' ? String(raw) : (strings[raw] ?? String(raw));
    return `${type}:${name}`;
  };

  const hits: HeapHit[] = [];
  for (let n = 0; n < nodeCount; n++) {
    const type = nodeTypes[nodes[n * nf + nType]!] ?? '';
    if (!STRING_TYPES.has(type)) continue;
    const name = strings[nodes[n * nf + nName]!] ?? '';
    const at = name.indexOf(needle);
    if (at < 0) continue;
    const chain: string[] = [describeNode(n)];
    if (parentNode[n] === -1) chain.push('(unreachable: only weak retainers)');
    for (let current = n; current !== 0 && parentNode[current]! >= 0 && chain.length <= maxDepth; ) {
      const from = parentNode[current]!;
      chain.push(`<-[${describeEdge(parentEdge[current]!)}]- ${describeNode(from)}`);
      current = from;
    }
    hits.push({ type, excerpt: name.slice(Math.max(0, at - 40), at + needle.length + 40), retainers: chain });
  }
  return hits;
}
