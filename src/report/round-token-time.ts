import type { RuntimeEvent } from '../core/runtime-event.ts';

/**
 * How a round used its tokens: how long it took, how much of it had tokens free while agents were queued for one,
 * and how long its tail on fewer tokens than the limit was. Calls in flight stand for tokens held (read from the
 * calls' own intervals, so a run spread over workers counts every worker's calls).
 *
 * @example
 * ```ts
 * const [first] = roundTokenTime(events, 3);
 * first.tailMs; // 12 000: the last 12 s of round 1 ran on fewer than 3 tokens
 * ```
 */
export interface RoundTokenTime {
  readonly round: number;
  /** `round.started` to `round.committed`, ms. */
  readonly spanMs: number;
  /** Time in the round with fewer calls in flight than the limit while some agent was queued for a token, ms. */
  readonly idleWhileWaitingMs: number;
  /**
   * From the last instant every token was in a call to the round's commit, ms: the round's tail (its whole span
   * when the tokens were never all busy).
   */
  readonly tailMs: number;
}

type Edge = {
  readonly at: number;
  readonly calls: number;
  readonly agent?: string;
  readonly queued?: boolean;
};

/** Each committed round's token time, from the run's events, with `limit` tokens. One sweep: O(events log events). */
export function roundTokenTime(events: readonly RuntimeEvent[], limit: number): RoundTokenTime[] {
  const bounds = new Map<number, { start?: number; end?: number }>();
  const edges: Edge[] = [];
  for (const e of events) {
    if (e.type === 'round.started') bounds.set(e.data.round, { ...bounds.get(e.data.round), start: e.at });
    else if (e.type === 'round.committed')
      bounds.set(e.data.round, { ...bounds.get(e.data.round), end: e.at });
    else if (e.type === 'call.attempt' && e.data.latencyMs > 0 && !e.data.memoized) {
      edges.push({ at: e.data.startedAt, calls: 1 }, { at: e.data.startedAt + e.data.latencyMs, calls: -1 });
    } else if (e.type === 'agent.state')
      edges.push({ at: e.at, calls: 0, agent: e.agent, queued: e.data.state === 'queued' });
  }
  // At one instant: calls end before others start (a token handed on), states change before either is counted.
  edges.sort((a, b) => a.at - b.at || a.calls - b.calls);
  const rounds = [...bounds]
    .flatMap(([round, { start, end }]) =>
      start !== undefined && end !== undefined && end >= start
        ? [{ round, start, end, idle: 0, lastFull: undefined as number | undefined }]
        : [],
    )
    .sort((a, b) => a.start - b.start);
  let inFlight = 0;
  const queued = new Set<string>();
  let t = Number.NEGATIVE_INFINITY;
  let r = 0;
  /** Counts the time from `t` to `at` (state unchanged in it) into the rounds it overlaps. */
  const upTo = (at: number) => {
    for (let i = r; i < rounds.length && rounds[i]!.start < at; i++) {
      const round = rounds[i]!;
      const from = Math.max(t, round.start);
      const to = Math.min(at, round.end);
      if (to <= from) continue;
      if (inFlight < limit && queued.size > 0) round.idle += to - from;
      if (inFlight >= limit) round.lastFull = to;
    }
    while (r < rounds.length && rounds[r]!.end <= at) r++;
    t = Math.max(t, at);
  };
  for (const e of edges) {
    upTo(e.at);
    inFlight += e.calls;
    if (e.agent !== undefined) {
      if (e.queued) queued.add(e.agent);
      else queued.delete(e.agent);
    }
  }
  upTo(Number.POSITIVE_INFINITY);
  return rounds
    .map(({ round, start, end, idle, lastFull }) => ({
      round,
      spanMs: end - start,
      idleWhileWaitingMs: idle,
      tailMs: end - (lastFull ?? start),
    }))
    .sort((a, b) => a.round - b.round);
}
