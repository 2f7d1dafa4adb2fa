/* The statechart the visualizer draws, as plain JSON (built by `statechart-graph.ts` from the real machine). */

/** One state of a statechart, as the page draws it. Plain JSON. */
export interface VizChartNode {
  /** Full id (`agent.degraded.resting`). */
  readonly id: string;
  /** Path below the root (`degraded.resting`); `''` for the root. */
  readonly path: string;
  /** Own key (`resting`). */
  readonly key: string;
  readonly type: string;
  /** Path of the initial child, for compound states. */
  readonly initial: string | null;
  /** Actors it invokes (`acquireToken`). */
  readonly invokes: readonly string[];
  /** Named effects it starts on entry (`startCall`: the engine call, stopped by its exit). */
  readonly entry: readonly string[];
  readonly children: readonly VizChartNode[];
}

/** One transition (parallel transitions with the same source, target and event are merged). */
export interface VizChartEdge {
  /** Source path (`queued`). */
  readonly source: string;
  /** Target path (`calling`). */
  readonly target: string;
  /** Readable event: `ASK`, `done(runTools)`, `after coolingDelay`. */
  readonly event: string;
  /** Guards of the merged transitions (`isPrimary`); empty when unguarded. */
  readonly guards: readonly string[];
}

/** A statechart drawn from a machine's real definition (`toDirectedGraph`). */
export interface VizChart {
  readonly machine: string;
  readonly root: VizChartNode;
  readonly edges: readonly VizChartEdge[];
}
