/*
 * How a lane of the timeline is drawn at any zoom: its segments are laid on pixel columns and every
 * column shows the most telling state that touched it (a 40 ms `cooling` inside an `idle` minute is still
 * seen). Nothing is dropped: a segment shorter than a column still owns one. Pure, for the page bundle.
 */

/** Which state wins a column several states share: the one that explains trouble. */
export const STATE_RANK: Readonly<Record<string, number>> = {
  degraded: 8,
  cooling: 7,
  fallback: 6,
  queued: 5,
  calling: 4,
  tools: 3,
  stopped: 2,
  idle: 1,
};

/** One stretch of a lane in one state: a segment, or the merge of the segments that share columns. */
export interface LaneSegment {
  readonly state: string;
  readonly from: number;
  readonly to: number | null;
}

/** Columns `[x0, x1)` drawn in `state`. */
export interface LaneRun {
  readonly x0: number;
  readonly x1: number;
  readonly state: string;
}

/** The window shown: `[from, to]` in run-clock ms. */
export interface LaneWindow {
  readonly from: number;
  readonly to: number;
}

/**
 * The runs of columns a lane is drawn with: `width` columns over `window`; an open segment (`to: null`)
 * ends at `end` (the instant shown).
 *
 * @example
 * ```ts
 * laneRuns([{ state: 'idle', from: 0, to: null }], { from: 0, to: 100 }, 10, 100);
 * // [{ x0: 0, x1: 10, state: 'idle' }]
 * ```
 */
export function laneRuns(
  segments: readonly LaneSegment[],
  window: LaneWindow,
  width: number,
  end: number,
): LaneRun[] {
  const span = window.to - window.from;
  const cols = Math.floor(width);
  if (!(span > 0) || cols <= 0) return [];
  const owner = new Int32Array(cols).fill(-1);
  const names: string[] = [];
  const index = new Map<string, number>();
  const rank = (i: number) => STATE_RANK[names[i]!] ?? 0;
  for (const seg of segments) {
    const s0 = seg.from;
    if (s0 > end || s0 > window.to) continue;
    const s1 = Math.min(seg.to ?? end, end);
    if (s1 < window.from) continue;
    let c0 = Math.floor(((Math.max(s0, window.from) - window.from) / span) * cols);
    let c1 = Math.ceil(((Math.min(s1, window.to) - window.from) / span) * cols);
    c0 = Math.min(Math.max(c0, 0), cols - 1);
    c1 = Math.min(Math.max(c1, c0 + 1), cols);
    let id = index.get(seg.state);
    if (id === undefined) {
      id = names.length;
      names.push(seg.state);
      index.set(seg.state, id);
    }
    const r = STATE_RANK[seg.state] ?? 0;
    for (let c = c0; c < c1; c++) {
      const o = owner[c]!;
      if (o === -1 || r > rank(o)) owner[c] = id;
    }
  }
  const runs: LaneRun[] = [];
  for (let c = 0; c < cols; ) {
    const o = owner[c]!;
    let d = c + 1;
    while (d < cols && owner[d] === o) d++;
    if (o !== -1) runs.push({ x0: c, x1: d, state: names[o]! });
    c = d;
  }
  return runs;
}
