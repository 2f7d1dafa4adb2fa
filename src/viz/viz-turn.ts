/** One turn as the agent panel lists it. */
export interface VizTurn {
  readonly turnId: string | null;
  readonly round: number | null;
  readonly itemId: string | null;
  readonly prompt: unknown;
  readonly answer: unknown;
  readonly outcome: string | null;
  readonly endpoint: string | null;
  readonly degraded: boolean;
  readonly faults: readonly string[];
}

/** What the agent panel shows for one agent: its turns and its latest snapshot. */
export interface VizAgentDetail {
  readonly agent: string;
  readonly turns: readonly VizTurn[];
  /** The agent actor's persisted snapshot (live) or the latest committed one (replay). */
  readonly snapshot: unknown;
  /** Memory slots, when known. */
  readonly memory: unknown;
}

/**
 * A committed turn (store `TurnRecord`) as the agent panel lists it.
 *
 * @example
 * ```ts
 * const turns = (await store.listTurns(runId)).filter((t) => t.agent === 'analyst').map(turnFromRecord);
 * ```
 */
export function turnFromRecord(t: {
  round: number;
  itemId: string;
  prompt: unknown;
  answer: unknown;
  outcome: string;
  endpointId: string | null;
  degraded: boolean;
  faults: readonly { kind?: string }[];
}): VizTurn {
  return {
    turnId: null,
    round: t.round,
    itemId: t.itemId,
    prompt: t.prompt,
    answer: t.answer,
    outcome: t.outcome,
    endpoint: t.endpointId,
    degraded: t.degraded,
    faults: (t.faults ?? []).map((f) => f?.kind ?? 'fault'),
  };
}
