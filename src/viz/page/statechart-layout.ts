import type { VizChart, VizChartNode } from '../statechart-graph.ts';

/*
 * A simple layered layout of a statechart, computed in the page: top-level states in columns by their
 * distance from the initial state, compound states as boxes holding their children, transitions as
 * curves between box borders (two opposite transitions bend to opposite sides).
 */

/** A state's box. */
export interface ChartBox {
  readonly path: string;
  readonly key: string;
  readonly x: number;
  readonly y: number;
  readonly w: number;
  readonly h: number;
  readonly compound: boolean;
  readonly invokes: readonly string[];
  readonly entry: readonly string[];
}

/** A transition's curve (parallel transitions between two states are one arrow). */
export interface ChartArrow {
  readonly source: string;
  readonly target: string;
  readonly events: readonly string[];
  /** SVG path data. */
  readonly d: string;
  readonly labelX: number;
  readonly labelY: number;
}

/** The laid-out chart. */
export interface ChartLayout {
  readonly width: number;
  readonly height: number;
  readonly boxes: readonly ChartBox[];
  readonly arrows: readonly ChartArrow[];
}

const PAD = 28;
const COLUMN = 178;
const ATOMIC_W = 128;
const ATOMIC_H = 34;
const CHILD_STEP = 40;
const GAP = 22;
const BEND = 14;

/**
 * Lays out a chart's top level in columns (breadth-first depth from the initial state).
 *
 * @example
 * ```ts
 * const { boxes } = layoutChart(chart);
 * boxes.find((b) => b.path === 'idle')?.x; // 14: the first column
 * ```
 */
export function layoutChart(chart: VizChart): ChartLayout {
  const top = chart.root.children;
  const topOf = (path: string) => path.split('.')[0] ?? path;
  const depth = new Map<string, number>();
  const start = chart.root.initial ?? top[0]?.path;
  if (start !== undefined) {
    depth.set(start, 0);
    const queue = [start];
    while (queue.length > 0) {
      const at = queue.shift()!;
      for (const e of chart.edges) {
        const from = topOf(e.source);
        const to = topOf(e.target);
        if (from !== at || from === to || depth.has(to)) continue;
        depth.set(to, (depth.get(at) ?? 0) + 1);
        queue.push(to);
      }
    }
  }
  const deepest = Math.max(0, ...depth.values());
  for (const n of top) if (!depth.has(n.path)) depth.set(n.path, deepest + 1);

  const boxes: ChartBox[] = [];
  const place = (n: VizChartNode, x: number, y: number, w: number): number => {
    const compound = n.children.length > 0;
    const h = heightOf(n);
    boxes.push({ path: n.path, key: n.key, x, y, w, h, compound, invokes: n.invokes, entry: n.entry ?? [] });
    n.children.forEach((c, i) => {
      place(c, x + 10, y + 26 + i * CHILD_STEP, w - 20);
    });
    return h;
  };
  // Columns are centred on the tallest one, so transitions fan out evenly.
  const columns = new Map<number, VizChartNode[]>();
  for (const n of top) {
    const col = depth.get(n.path) ?? 0;
    columns.set(col, [...(columns.get(col) ?? []), n]);
  }
  const columnHeight = (nodes: readonly VizChartNode[]) =>
    nodes.reduce((sum, n) => sum + heightOf(n), 0) + GAP * Math.max(0, nodes.length - 1);
  const tallest = Math.max(0, ...[...columns.values()].map(columnHeight));
  for (const [col, nodes] of columns) {
    let y = PAD + (tallest - columnHeight(nodes)) / 2;
    for (const n of nodes) {
      const w = n.children.length > 0 ? ATOMIC_W + 24 : ATOMIC_W;
      y += place(n, PAD + col * COLUMN, y, w) + GAP;
    }
  }
  const height = tallest + PAD * 2;
  const width = PAD * 2 + Math.max(0, ...depth.values()) * COLUMN + ATOMIC_W + 24;

  const byPath = new Map(boxes.map((b) => [b.path, b]));
  const pairs = new Map<string, { source: string; target: string; events: string[] }>();
  for (const e of chart.edges) {
    const key = `${e.source}\u0000${e.target}`;
    const p = pairs.get(key) ?? { source: e.source, target: e.target, events: [] };
    const label = e.guards.length > 0 ? `${e.event} [${e.guards.join(' | ')}]` : e.event;
    if (!p.events.includes(label)) p.events.push(label);
    pairs.set(key, p);
  }
  const arrows: ChartArrow[] = [];
  for (const p of pairs.values()) {
    const a = byPath.get(p.source);
    const b = byPath.get(p.target);
    if (!a || !b) continue;
    arrows.push({ ...p, ...curve(a, b) });
  }
  return { width, height, boxes, arrows };
}

function heightOf(n: VizChartNode): number {
  return n.children.length > 0 ? 30 + n.children.length * CHILD_STEP : ATOMIC_H;
}

function centre(b: ChartBox): [number, number] {
  return [b.x + b.w / 2, b.y + b.h / 2];
}

/** Where the ray from the box's centre towards (dx, dy) leaves the box. */
function border(b: ChartBox, dx: number, dy: number): [number, number] {
  const [cx, cy] = centre(b);
  const t = Math.min(
    dx === 0 ? Number.POSITIVE_INFINITY : b.w / 2 / Math.abs(dx),
    dy === 0 ? Number.POSITIVE_INFINITY : b.h / 2 / Math.abs(dy),
  );
  return [cx + dx * t, cy + dy * t];
}

function curve(a: ChartBox, b: ChartBox): { d: string; labelX: number; labelY: number } {
  const [ax, ay] = centre(a);
  const [bx, by] = centre(b);
  const dx = bx - ax;
  const dy = by - ay;
  const len = Math.hypot(dx, dy) || 1;
  const [nx, ny] = [-dy / len, dx / len];
  const [sx, sy] = border(a, dx, dy);
  const [ex, ey] = border(b, -dx, -dy);
  // Backward transitions bow wider, so they pass around the boxes between.
  const bend = dx < 0 ? BEND + len * 0.22 : BEND;
  const cx = (sx + ex) / 2 + nx * bend;
  const cy = (sy + ey) / 2 + ny * bend;
  const r = (v: number) => Math.round(v * 10) / 10;
  return {
    d: `M${r(sx)},${r(sy)} Q${r(cx)},${r(cy)} ${r(ex)},${r(ey)}`,
    labelX: r((sx + 2 * cx + ex) / 4),
    labelY: r((sy + 2 * cy + ey) / 4),
  };
}
