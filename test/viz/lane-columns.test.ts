import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type LaneSegment, laneRuns, STATE_RANK } from '../../src/viz/page/lane-columns.ts';

/*
 * The timeline's aggregation: at any zoom a lane covers its agent from its first state to the instant
 * drawn, with no hole, and no state is dropped — a segment shorter than a pixel still owns a column
 * (unless a more telling state shares it).
 */

const STATES = Object.keys(STATE_RANK);

/** A lane as the reducer builds it: contiguous segments from `start`, the last one open. */
const laneArb = fc
  .record({
    start: fc.integer({ min: 0, max: 1_000_000 }),
    steps: fc.array(
      fc.record({ state: fc.constantFrom(...STATES), ms: fc.integer({ min: 0, max: 50_000 }) }),
      {
        minLength: 1,
        maxLength: 3_000,
      },
    ),
    tail: fc.integer({ min: 0, max: 50_000 }),
  })
  .map(({ start, steps, tail }) => {
    const segments: LaneSegment[] = [];
    let t = start;
    steps.forEach((s, i) => {
      const last = i === steps.length - 1;
      segments.push({ state: s.state, from: t, to: last ? null : t + s.ms });
      t += s.ms;
    });
    return { segments, start, end: t + tail };
  });

describe('laneRuns', () => {
  it('covers every column from the first segment to the end: no hole at any zoom', () => {
    fc.assert(
      fc.property(laneArb, fc.integer({ min: 50, max: 2_000 }), ({ segments, start, end }, width) => {
        const runs = laneRuns(segments, { from: start, to: Math.max(end, start + 1) }, width, end);
        // Runs tile [0, last) without gaps and in order.
        let x = 0;
        for (const r of runs) {
          expect(r.x0).toBe(x);
          expect(r.x1).toBeGreaterThan(r.x0);
          x = r.x1;
        }
        const span = Math.max(end, start + 1) - start;
        expect(x).toBeGreaterThanOrEqual(Math.min(width, Math.ceil(((end - start) / span) * width)));
      }),
      { seed: 16, numRuns: 200 },
    );
  });

  it('drops no state: each state of the lane owns a column unless a more telling one shares it', () => {
    fc.assert(
      fc.property(laneArb, fc.integer({ min: 50, max: 2_000 }), ({ segments, start, end }, width) => {
        const w = { from: start, to: Math.max(end, start + 1) };
        const runs = laneRuns(segments, w, width, end);
        const drawn = new Set(runs.map((r) => r.state));
        const span = w.to - w.from;
        for (const seg of segments) {
          if (drawn.has(seg.state)) continue;
          // Not drawn: every column it touches is owned by a state that ranks higher.
          const c = Math.min(width - 1, Math.floor(((seg.from - w.from) / span) * width));
          const owner = runs.find((r) => r.x0 <= c && c < r.x1);
          expect(owner).toBeDefined();
          expect(STATE_RANK[owner!.state]!).toBeGreaterThan(STATE_RANK[seg.state]!);
        }
      }),
      { seed: 16, numRuns: 200 },
    );
  });

  it('a zoomed window shows only what is inside it', () => {
    const segments: LaneSegment[] = [
      { state: 'idle', from: 0, to: 1_000 },
      { state: 'cooling', from: 1_000, to: 1_010 },
      { state: 'idle', from: 1_010, to: null },
    ];
    expect(laneRuns(segments, { from: 0, to: 10_000 }, 100, 10_000)).toEqual([
      { x0: 0, x1: 10, state: 'idle' },
      { x0: 10, x1: 11, state: 'cooling' },
      { x0: 11, x1: 100, state: 'idle' },
    ]);
    expect(laneRuns(segments, { from: 2_000, to: 3_000 }, 10, 10_000)).toEqual([
      { x0: 0, x1: 10, state: 'idle' },
    ]);
  });
});
