import type { VizAgent, VizState } from '../../viz-state-types.ts';
import { byId, h, setText } from '../page-dom.ts';
import { agentNames, view } from '../page-view.ts';
import { seconds } from '../time-format.ts';
import { reasonText } from './agent-reason.ts';

/*
 * The agents' cards: built once per agent and kept sorted by name, their text updated in place (a card is
 * never rebuilt, so a press and its release meet the same element), and a legend of the states.
 */

const STATES = ['idle', 'queued', 'calling', 'fallback', 'tools', 'cooling', 'degraded', 'stopped'];

interface Card {
  el: HTMLElement;
  state: HTMLElement;
  path: HTMLElement;
  countdown: HTMLElement;
  reason: HTMLElement;
  endpoint: HTMLElement;
  meta: HTMLElement;
}
const cards = new Map<string, Card>();

/** Marks the selected agent's card (and only it) at once, before any redraw. */
export function markSelectedCard(name: string): void {
  for (const [n, c] of cards) c.el.classList.toggle('selected', n === name);
}

export function renderAgents(state: VizState): void {
  const box = byId('agents');
  const names = agentNames(state);
  const now = view.now ?? 0;
  if (names.length === 0 && cards.size === 0) {
    if (!box.querySelector('.muted')) box.replaceChildren(h('p', { class: 'muted' }, 'no agents yet'));
    return;
  }
  for (const name of names) {
    const a = state.agents[name]!;
    const card = cards.get(name) ?? addCard(box, name, a);
    const cls = `agent s-${a.state}${view.selected === name ? ' selected' : ''}`;
    if (card.el.className !== cls) card.el.className = cls;
    card.el.setAttribute('data-state', a.state);
    setText(card.state, a.state);
    card.state.className = `state-pill s-${a.state}`;
    setText(card.path, a.path && a.path !== a.state ? ` ${a.path}` : '');
    setText(
      card.countdown,
      a.state === 'cooling' && a.coolingUntil !== null ? ` ${seconds(a.coolingUntil - now)}` : '',
    );
    setText(card.reason, reasonText(a, state, now));
    setText(card.endpoint, a.lastEndpoint ?? '—');
    setText(card.meta, ` · turns ${a.turns}${a.degradedTurns ? ` (${a.degradedTurns} degraded)` : ''}`);
  }
  if (!box.querySelector('.legend')) {
    const legend = h('div', { class: 'legend' });
    for (const st of STATES.slice(0, 7)) legend.append(h('span', { class: `state-pill s-${st}` }, st));
    box.append(legend);
  }
}

/** An agent's card, built once and put in its place (the cards stay sorted by name). */
function addCard(box: HTMLElement, name: string, a: VizAgent): Card {
  box.querySelector('p.muted')?.remove();
  const st = h('span', { class: 'state-pill', 'data-testid': `agent-${name}-state` });
  const path = h('span', { class: 'meta' });
  const countdown = h('span', { 'data-testid': `agent-${name}-countdown` });
  const reason = h('div', { class: 'reason', 'data-testid': `agent-${name}-reason` });
  const endpoint = h('span', { 'data-testid': `agent-${name}-endpoint` });
  const meta = h('span', {});
  const el = h(
    'div',
    { class: 'agent', 'data-testid': `agent-${name}`, 'data-agent': name, role: 'button', tabindex: 0 },
    h('div', {}, h('span', { class: 'name' }, name), ' ', h('span', { class: 'meta' }, a.tier ?? '')),
    h('div', {}, st, path, countdown),
    reason,
    h('div', { class: 'meta' }, `chain ${a.chain ?? '?'} · last `, endpoint, meta),
  );
  const card = { el, state: st, path, countdown, reason, endpoint, meta };
  cards.set(name, card);
  // Keep the cards sorted: insert before the first later name.
  const after = [...cards.keys()].sort().find((n) => n > name);
  const legend = box.querySelector('.legend');
  box.insertBefore(el, (after ? cards.get(after)?.el : null) ?? legend ?? null);
  return card;
}

/** Selects an agent on a card's press or Enter/Space: one listener for every card. */
export function listenForCardPress(select: (name: string) => void): void {
  // One listener for every card: cards are never rebuilt, so a press and its release meet the same one.
  const agents = byId('agents');
  // Selected on the press, not the release: in a storm the cards' text changes under a held button, and a
  // press is answered at once.
  agents.addEventListener('pointerdown', (e) => {
    if (e.button !== 0) return;
    const card = (e.target as Element).closest('[data-agent]');
    if (card) select(card.getAttribute('data-agent')!);
  });
  agents.addEventListener('keydown', (e) => {
    const card = (e.target as Element).closest('[data-agent]');
    if (card && (e.key === 'Enter' || e.key === ' ')) select(card.getAttribute('data-agent')!);
  });
}
