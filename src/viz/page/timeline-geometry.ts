import type { LaneWindow } from './lane-columns.ts';
import type { TimelineInput } from './timeline-types.ts';

/*
 * Where the timeline draws: the lanes' layout in canvas pixels (names on the left, a lane per agent, its
 * state bar, calls under it), and the map between run-clock time and x over the window shown.
 */

export const LEFT = 120;
export const LANE = 30;
export const TOP = 8;
export const BAR = 14;

/** The window shown: the zoom when there is one, else the whole run; never empty. */
export function shownWindow(input: TimelineInput | null, zoom: LaneWindow | null): LaneWindow {
  if (!input) return { from: 0, to: 1 };
  const w = zoom ?? input.span;
  return w.to > w.from ? w : { from: w.from, to: w.from + 1 };
}

export const plotWidth = (canvas: HTMLCanvasElement) => Math.max(50, canvas.width - LEFT - 10);

export const xOf = (canvas: HTMLCanvasElement, t: number, w: LaneWindow) =>
  LEFT + ((t - w.from) / (w.to - w.from)) * plotWidth(canvas);

export const tOf = (canvas: HTMLCanvasElement, x: number, w: LaneWindow) =>
  w.from + ((x - LEFT) / plotWidth(canvas)) * (w.to - w.from);
