import type { VizState } from '../../viz-state-types.ts';
import type { VizAgentDetail, VizTurn } from '../../viz-turn.ts';
import { byId, h } from '../page-dom.ts';
import { getJson, own } from '../page-json.ts';
import { type View, view } from '../page-view.ts';
import { scheduleRender } from '../render-frame.ts';
import { markSelectedCard } from './agents-panel.ts';
import { turnsAt, turnsTable } from './detail-turns.ts';

/*
 * The agent detail: the selected agent's turns and snapshot, fetched once per selection (live: again after a
 * commit, at most every DETAIL_REFETCH_MS), shown in step with the instant.
 */

/** Least real time between two reads of the selected agent's turns, live (ms). */
const DETAIL_REFETCH_MS = 2000;

let detailKey = '';
let detailLoad: AbortController | undefined;

/** Draws the detail again on the next render. */
export function forgetDetail(): void {
  detailKey = '';
}

/** Selects an agent: its card and the detail's title at once, its turns and snapshot fetched. */
export function select(name: string): void {
  if (view.selected !== name) {
    view.selected = name;
    // Answer the click at once: the selection and the detail's title, before any fetch or redraw.
    markSelectedCard(name);
    byId('detail').replaceChildren(
      h('h3', { 'data-testid': 'agent-detail-name' }, name),
      h('p', { class: 'muted', 'data-testid': 'agent-turns' }, 'loading…'),
    );
    detailKey = '';
    void loadDetail(name);
  }
  scheduleRender();
}

async function loadDetail(name: string): Promise<void> {
  detailLoad?.abort();
  const ctl = new AbortController();
  detailLoad = ctl;
  const round = view.state.run.committedRound;
  const turns = own(view.state.agents, name)?.turns ?? 0;
  const fetchedAt = performance.now();
  try {
    let data: VizAgentDetail;
    if (view.mode === 'live')
      data = await getJson<VizAgentDetail>(`/api/live/agents/${encodeURIComponent(name)}`, ctl.signal);
    else {
      const run = encodeURIComponent(view.runId ?? '');
      const [turns, snapshot] = await Promise.all([
        getJson<VizTurn[]>(`/api/runs/${run}/turns?agent=${encodeURIComponent(name)}`, ctl.signal),
        getJson<unknown>(`/api/runs/${run}/snapshots?agent=${encodeURIComponent(name)}`, ctl.signal).catch(
          (e: Error) => ({ error: e.message }),
        ),
      ]);
      data = { agent: name, turns, snapshot, memory: null };
    }
    if (view.selected !== name) return;
    view.detail = { agent: name, round, turns, fetchedAt, data };
    detailKey = '';
    scheduleRender();
  } catch (e) {
    if (ctl.signal.aborted || view.selected !== name) return;
    // A refresh that fails keeps what was shown (the run may just have ended).
    if (view.detail?.agent === name) return;
    byId('detail').replaceChildren(
      h('h3', { 'data-testid': 'agent-detail-name' }, name),
      h('p', { class: 'muted' }, `cannot load ${name}: ${(e as Error).message}`),
    );
  }
}

export function renderDetail(state: VizState): void {
  const name = view.selected;
  if (!name) return;
  const detail = view.detail?.agent === name ? view.detail : null;
  const now = view.now ?? Number.POSITIVE_INFINITY;
  const agent = own(state.agents, name);
  // Live: the turns are read again once a round is committed or the agent finished turns since, at most
  // every DETAIL_REFETCH_MS; never on every event.
  if (view.mode === 'live' && detail)
    refetchIfStale(name, detail, state.run.committedRound, agent?.turns ?? 0);
  const key = `${name}:${detail ? 'y' : 'n'}:${detail?.data.turns.length ?? 0}:${agent?.turns ?? 0}:${view.mode === 'replay' ? now : ''}`;
  if (key === detailKey || !detail) return;
  detailKey = key;
  const { turns, pending } = turnsAt(name, detail.data.turns, now);
  const table = turnsTable(turns, pending);
  const rows = turns.length + pending.length;
  const lastCommit = Math.max(0, ...view.roundAt.values());
  const snapshotNote =
    view.mode === 'replay' && now < lastCommit
      ? 'The stored snapshot is of the last committed round, after this instant; the state at this instant is on the card and the statechart.'
      : null;
  byId('detail').replaceChildren(
    h('h3', { 'data-testid': 'agent-detail-name' }, name),
    h('p', { class: 'meta', 'data-testid': 'agent-turn-count' }, `${rows} turn(s) at this instant`),
    rows ? table : h('p', { class: 'muted', 'data-testid': 'agent-turns' }, 'no turns yet'),
    h('h4', {}, view.mode === 'live' ? 'Snapshot now' : 'Last committed snapshot'),
    snapshotNote
      ? h('p', { class: 'muted', 'data-testid': 'agent-snapshot' }, snapshotNote)
      : h(
          'pre',
          { 'data-testid': 'agent-snapshot' },
          JSON.stringify(detail.data.snapshot, null, 2)?.slice(0, 20_000) ?? 'none',
        ),
  );
}

/**
 * Live: reads the turns again once a round is committed or the agent finished turns since the last read;
 * too soon after it, a render is asked for when the wait is over.
 */
function refetchIfStale(
  name: string,
  detail: NonNullable<View['detail']>,
  committedRound: number,
  agentTurns: number,
): void {
  const stale = committedRound > detail.round || agentTurns > detail.turns;
  const wait = detail.fetchedAt + DETAIL_REFETCH_MS - performance.now();
  if (stale && wait <= 0) {
    detail.round = committedRound;
    detail.turns = agentTurns;
    detail.fetchedAt = performance.now();
    void loadDetail(name);
  } else if (stale) setTimeout(scheduleRender, wait);
}
