import type { VizEvent } from '../../viz-state-types.ts';
import type { VizTurn } from '../../viz-turn.ts';
import { h } from '../page-dom.ts';
import { view } from '../page-view.ts';

/*
 * The selected agent's turns as the detail panel lists them: the stored turns in step with the instant, and
 * live, the turns completed since the last commit (from the feed).
 */

function text(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { text?: unknown }).text === 'string')
    return (v as { text: string }).text;
  return JSON.stringify(v);
}

/** The stored turns shown at `now`, and (live) the completed turns not stored yet. */
export function turnsAt(
  name: string,
  all: readonly VizTurn[],
  now: number,
): { turns: readonly VizTurn[]; pending: readonly VizEvent[] } {
  // When a stored turn belongs to the instant: when it completed (log), else when its round was committed.
  const at = (t: VizTurn) =>
    (t.round !== null && t.itemId !== null ? view.turnAt.get(`${name}|${t.round}|${t.itemId}`) : undefined) ??
    (t.round !== null ? view.roundAt.get(t.round) : undefined);
  // In step with the instant: a stored turn shows once it completed at or before it.
  const turns = all.filter((t) => view.mode !== 'replay' || (at(t) ?? 0) <= now);
  const stored = new Set(all.map((t) => `${t.round}|${t.itemId}`));
  // Live: the turns completed since the last commit (from the feed), so the list matches the card.
  const pending =
    view.mode === 'live'
      ? view.log.filter(
          (e) =>
            e.type === 'turn.completed' &&
            e.agent === name &&
            !stored.has(`${(e.data as { round?: number }).round}|${(e.data as { itemId?: string }).itemId}`),
        )
      : [];
  return { turns, pending };
}

/** The turns' table: the last 50 stored turns, then the last 50 not committed yet. */
export function turnsTable(turns: readonly VizTurn[], pending: readonly VizEvent[]): HTMLElement {
  const table = h(
    'table',
    { class: 'turns', 'data-testid': 'agent-turns' },
    h('tr', {}, ...['round', 'prompt', 'answer', 'endpoint', 'outcome'].map((c) => h('th', {}, c))),
  );
  for (const t of turns.slice(-50)) table.append(storedTurnRow(t));
  for (const e of pending.slice(-50)) table.append(pendingTurnRow(e));
  return table;
}

function storedTurnRow(t: VizTurn): HTMLElement {
  return h(
    'tr',
    {
      'data-testid': 'turn-row',
      'data-degraded': t.degraded ? 'true' : 'false',
      'data-committed': 'true',
    },
    h('td', {}, t.round === null ? '—' : String(t.round)),
    h('td', { 'data-testid': 'turn-prompt' }, text(t.prompt).slice(0, 400)),
    h('td', { 'data-testid': 'turn-answer' }, text(t.answer).slice(0, 600)),
    h('td', { 'data-testid': 'turn-endpoint' }, t.endpoint ?? '—'),
    h(
      'td',
      { 'data-testid': 'turn-outcome' },
      t.degraded ? h('span', { class: 'degraded-flag' }, 'DEGRADED') : (t.outcome ?? ''),
      t.faults.length ? ` (faults: ${t.faults.join(', ')})` : '',
    ),
  );
}

function pendingTurnRow(e: VizEvent): HTMLElement {
  const d = e.data as { round?: number; outcome?: string; degraded?: boolean; attempts?: number };
  return h(
    'tr',
    {
      'data-testid': 'turn-row',
      'data-degraded': d.degraded ? 'true' : 'false',
      'data-committed': 'false',
      class: 'later',
    },
    h('td', {}, `${d.round ?? '—'} (not committed yet)`),
    h('td', { class: 'muted' }, '—'),
    h('td', { class: 'muted' }, '—'),
    h('td', { 'data-testid': 'turn-endpoint' }, e.endpoint ?? '—'),
    h(
      'td',
      { 'data-testid': 'turn-outcome' },
      `${d.outcome ?? ''}${d.degraded ? ' DEGRADED' : ''}, ${d.attempts ?? '?'} attempts`,
    ),
  );
}
