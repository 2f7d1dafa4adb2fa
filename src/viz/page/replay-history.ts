import { eventFromRecord } from '../../core/stored-event.ts';
import type { VizCheck, VizEvent, VizEventRecord, VizState } from '../viz-state-types.ts';
import { applyEvent, emptyVizState } from '../viz-state.ts';
import { getJson } from './page-json.ts';
import { noteTurn, view } from './page-view.ts';

/*
 * Replay's history: the run's event log, folded once (the history every instant draws) with checkpoints
 * kept on the way, so the state at any instant is a checkpoint plus at most CHECKPOINT events.
 */

let replayEvents: VizEvent[] = [];
let replayInitial: VizState = emptyVizState();
/** Folds every `CHECKPOINT` events kept, so a scrub folds at most that many. */
const CHECKPOINT = 500;
let checkpoints: { index: number; state: VizState }[] = [];

/** Events in the run's log. */
export function replayEventCount(): number {
  return replayEvents.length;
}

/** The run's whole event log, read a page of 5 000 at a time. */
export async function loadRunEvents(run: string): Promise<VizEvent[]> {
  const events: VizEvent[] = [];
  for (let after = 0; ; ) {
    const page = await getJson<(VizEventRecord & { seq: number })[]>(
      `/api/runs/${run}/events?afterSeq=${after}&limit=5000`,
    );
    for (const r of page) events.push(eventFromRecord(r));
    if (page.length < 5000) break;
    after = page[page.length - 1]!.seq;
  }
  return events;
}

/**
 * Folds the run's log from `initial`: the history (`view.history`), the checkpoints, the list's events and
 * the turns' times.
 */
export function foldReplay(events: VizEvent[], initial: VizState): void {
  replayInitial = initial;
  replayEvents = events;
  // One fold of the whole log: the history every instant draws, and checkpoints for scrubbing. The
  // checkpoints hold only when the log's times never go back (they do not, but a hand-made log might).
  const sorted = events.every((e, i) => i === 0 || Number(e.at) >= Number(events[i - 1]!.at));
  let state = replayInitial;
  checkpoints = [{ index: 0, state }];
  events.forEach((e, i) => {
    state = applyEvent(state, e);
    if (sorted && (i + 1) % CHECKPOINT === 0) checkpoints.push({ index: i + 1, state });
    if (e.type !== 'viz.sample') view.log.push(e);
    noteTurn(e);
  });
  if (!sorted) checkpoints = [{ index: 0, state: replayInitial }];
  view.history = state;
}

/** The report's checks, added to every state replay shows (for the run's end). */
export function addReplayChecks(checks: VizCheck[]): void {
  const withChecks = (st: VizState): VizState => ({ ...st, run: { ...st.run, checks } });
  replayInitial = withChecks(replayInitial);
  checkpoints = checkpoints.map((c) => ({ index: c.index, state: withChecks(c.state) }));
  view.history = withChecks(view.history);
}

export function replayStateAt(t: number): VizState {
  let lo = 0;
  for (const c of checkpoints)
    if (c.index > 0 && Number(replayEvents[c.index - 1]!.at) <= t) lo = checkpoints.indexOf(c);
  let state = checkpoints[lo]?.state ?? replayInitial;
  for (let i = checkpoints[lo]?.index ?? 0; i < replayEvents.length; i++) {
    const e = replayEvents[i]!;
    if (Number(e.at) <= t) state = applyEvent(state, e);
  }
  return state;
}
