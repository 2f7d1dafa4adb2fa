import type { VizAgent, VizCall, VizMarker, VizSegment } from '../viz-state-types.ts';
import type { LaneWindow } from './lane-columns.ts';

/** What a click on the timeline found. */
export type TimelinePick =
  | { readonly kind: 'marker'; readonly agent: string; readonly at: number; readonly marker: VizMarker }
  | { readonly kind: 'call'; readonly agent: string; readonly at: number; readonly call: VizCall }
  | { readonly kind: 'segment'; readonly agent: string; readonly at: number; readonly segment: VizSegment };

export interface TimelineInput {
  readonly agents: readonly VizAgent[];
  /** The whole run: first event → last event (or now, live). */
  readonly span: LaneWindow;
  /** The instant shown (the cursor). */
  readonly now: number;
  /**
   * Where the drawn history ends: open segments end here and nothing later is drawn. Replay: the run's
   * last event (the whole run, wherever the cursor is); live: now.
   */
  readonly end: number;
  /** Draw the cursor line (replay). */
  readonly cursor: boolean;
  /** How the axis writes a time. Default: UTC time of day. */
  readonly label?: (t: number) => string;
}

/** The timeline widget. */
export interface Timeline {
  draw(input: TimelineInput): void;
  /** The window shown, or `null` for the whole run. */
  window(): LaneWindow | null;
  fit(): void;
  /** Shows `[from, to]` (run clock). */
  zoomTo(from: number, to: number): void;
  /** Client coordinates of an agent's i-th marker (tests, keyboard). */
  markerPoint(agent: string, i: number): { x: number; y: number } | null;
  /** Where things are drawn, in canvas pixels (tests read the canvas with it). */
  geometry(): {
    left: number;
    plot: number;
    laneTop: Record<string, number>;
    bar: number;
    window: LaneWindow;
  };
}
