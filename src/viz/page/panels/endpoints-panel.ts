import { breakerLabel } from '../../viz-event-handlers.ts';
import type { VizEndpoint, VizState } from '../../viz-state-types.ts';
import { byId, h } from '../page-dom.ts';
import { view } from '../page-view.ts';
import { seconds } from '../time-format.ts';

/*
 * The endpoints' table: breaker, cooldown or disable, in flight, RPM and TPM left, calls and the last fault.
 * Small: rebuilt only when what it shows changed (or its countdowns moved by a tenth of a second).
 */

let endpointsKey = '';

/** Draws the endpoints again on the next render. */
export function forgetEndpoints(): void {
  endpointsKey = '';
}

function bucketCell(id: string, name: string, b: VizEndpoint['rpm']): HTMLElement {
  if (!b || b.available === null)
    return h('td', { 'data-testid': `endpoint-${id}-${name}`, title: 'known from a live run only' }, '—');
  const cap = b.capacity;
  const pct = cap ? Math.max(0, Math.min(100, (b.available / cap) * 100)) : 100;
  const bar = h('span', { class: 'bar' }, h('span', {}));
  (bar.firstChild as HTMLElement).style.width = `${pct}%`;
  return h(
    'td',
    { 'data-testid': `endpoint-${id}-${name}` },
    bar,
    `${Math.floor(b.available)}${cap ? ` / ${cap}` : ''}`,
  );
}

export function renderEndpoints(state: VizState): void {
  const now = view.now ?? 0;
  const key = JSON.stringify([state.endpoints, Math.floor(now / 100)]);
  if (key === endpointsKey) return;
  endpointsKey = key;
  const table = h(
    'table',
    {},
    h(
      'tr',
      {},
      ...[
        'endpoint',
        'model',
        'breaker',
        'open until',
        'cooldown',
        'in flight',
        'RPM left',
        'TPM left',
        'calls',
        'last fault',
      ].map((c) => h('th', {}, c)),
    ),
  );
  for (const id of Object.keys(state.endpoints).sort()) {
    const e = state.endpoints[id]!;
    const cooling = e.cooldownUntil > now;
    const disabled = e.disabledUntil > now;
    table.append(
      h(
        'tr',
        { 'data-testid': `endpoint-${id}` },
        h('td', {}, id),
        h('td', { class: 'meta' }, [e.provider, e.model].filter(Boolean).join(' · ') || '—'),
        h(
          'td',
          {},
          h(
            'span',
            {
              class: `breaker b-${e.breaker}`,
              'data-testid': `endpoint-${id}-breaker`,
              'data-breaker': e.breaker,
            },
            breakerLabel(e.breaker),
          ),
        ),
        h(
          'td',
          { 'data-testid': `endpoint-${id}-open-until` },
          e.breaker === 'open' && e.openUntil !== null ? `half-open in ${seconds(e.openUntil - now)}` : '—',
        ),
        h(
          'td',
          { 'data-testid': `endpoint-${id}-cooldown` },
          disabled
            ? `disabled ${seconds(e.disabledUntil - now)}${e.disabledReason ? ` (${e.disabledReason})` : ''}`
            : cooling
              ? seconds(e.cooldownUntil - now)
              : '—',
        ),
        h('td', { 'data-testid': `endpoint-${id}-inflight` }, String(e.inFlight)),
        bucketCell(id, 'rpm', e.rpm),
        bucketCell(id, 'tpm', e.tpm),
        h('td', {}, `${e.calls}${e.faults ? ` (${e.faults} failed)` : ''}`),
        h('td', {}, e.lastFault ? `${e.lastFault.status ?? ''} ${e.lastFault.kind}`.trim() : '—'),
      ),
    );
  }
  byId('endpoints').replaceChildren(table);
}
