import type { VizState } from '../../viz-state-types.ts';
import { byId, h } from '../page-dom.ts';
import { own } from '../page-json.ts';

/* The global tokens: held of the limit, a slot each, who holds them, and who waits for one by tier. */

let tokensKey = '';

/** Draws the tokens again on the next render. */
export function forgetTokens(): void {
  tokensKey = '';
}

export function renderTokens(state: VizState): void {
  const t = state.tokens;
  const key = JSON.stringify([t, Object.values(state.agents).map((a) => a.tier)]);
  if (key === tokensKey) return;
  tokensKey = key;
  const slots = h('div', { class: 'slots' });
  const limit = t.limit ?? Math.max(t.held, 1);
  for (let i = 0; i < Math.max(limit, t.held); i++)
    slots.append(h('span', { class: `slot${i < t.held ? ' held' : ''}` }));
  const tiers = new Set<string>(Object.keys(t.queue));
  for (const a of Object.values(state.agents)) if (a.tier) tiers.add(a.tier);
  const queue = h('table', {}, h('tr', {}, h('th', {}, 'tier'), h('th', {}, 'waiting for a token')));
  for (const tier of [...tiers].sort())
    queue.append(
      h(
        'tr',
        {},
        h('td', {}, tier),
        h('td', { 'data-testid': `tokens-queue-${tier}` }, (own(t.queue, tier) ?? []).join(', ') || '—'),
      ),
    );
  byId('tokens').replaceChildren(
    h(
      'div',
      { class: 'tokens-big' },
      h('span', { 'data-testid': 'tokens-held' }, String(t.held)),
      ' / ',
      h('span', { 'data-testid': 'tokens-limit' }, t.limit === null ? '?' : String(t.limit)),
    ),
    slots,
    h(
      'div',
      { class: 'meta', 'data-testid': 'tokens-holders' },
      t.holders.length > 0
        ? `held by ${t.holders.map((x) => `${x.holder} → ${x.endpoint}`).join(', ')}`
        : 'none held',
    ),
    queue,
  );
}
