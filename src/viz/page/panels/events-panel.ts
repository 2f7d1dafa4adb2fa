import { breakerLabel } from '../../viz-event-handlers.ts';
import type { VizEvent } from '../../viz-state-types.ts';
import { byId, h } from '../page-dom.ts';
import { view } from '../page-view.ts';
import { seconds, shortTime } from '../time-format.ts';

/*
 * The event list: the newest runtime events at or before the instant shown that match the filter, one line
 * each; a click on one shows it in full.
 */

/** Rows the event list shows at most (the newest that match, at or before the instant). */
const EVENT_ROWS = 120;

let eventsKey = '';
let shownEvents: VizEvent[] = [];

/** Draws the list again on the next render. */
export function forgetEvents(): void {
  eventsKey = '';
}

function eventText(e: VizEvent): string {
  const d = (e.data ?? {}) as Record<string, unknown>;
  const who = [e.agent, e.endpoint].filter(Boolean).join(' × ');
  switch (e.type) {
    case 'call.attempt':
      return `${who}: ${d.outcome === 'fault' ? `${d.status ?? ''} ${d.faultKind ?? 'fault'}`.trim() : 'ok'} in ${d.latencyMs ?? '?'} ms${d.retryAfterMs !== undefined ? ` · Retry-After ${seconds(Number(d.retryAfterMs))}` : ''}`;
    case 'agent.state':
      return `${e.agent}: ${d.previous ?? '?'} → ${d.state}`;
    case 'breaker.state':
      return `${e.endpoint} breaker ${breakerLabel(String(d.state))}`;
    case 'turn.completed':
      return `${e.agent}: turn ${d.outcome}${d.degraded ? ' (degraded)' : ''}, ${d.attempts} attempts, waited ${seconds(Number(d.waitMs ?? 0))}`;
    case 'token.wait':
      return `${who}: waits (${d.cause}) until ${shortTime(Number(d.until))}`;
    case 'route.wait':
      return `${who}: waits until ${shortTime(Number(d.until))} (~${Math.round(Number(d.expectedMs))} ms) rather than ${d.insteadOf} (~${Math.round(Number(d.insteadExpectedMs))} ms)`;
    default:
      return `${who}${who ? ': ' : ''}${Object.entries(d)
        .filter(([, v]) => typeof v !== 'object')
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`;
  }
}

export function renderEvents(): void {
  const now = view.now ?? Number.POSITIVE_INFINITY;
  const f = view.filter.trim().toLowerCase();
  const key = `${view.log.length}:${now}:${f}`;
  if (key === eventsKey) return;
  eventsKey = key;
  const rows: VizEvent[] = [];
  for (let i = view.log.length - 1; i >= 0 && rows.length < EVENT_ROWS; i--) {
    const e = view.log[i]!;
    if (e.at > now) continue;
    if (f && !`${e.type} ${e.agent ?? ''} ${e.endpoint ?? ''} ${eventText(e)}`.toLowerCase().includes(f))
      continue;
    rows.push(e);
  }
  shownEvents = rows;
  byId('events').replaceChildren(
    ...rows.map((e, i) =>
      h(
        'li',
        {
          'data-i': i,
          'data-testid': 'event-row',
          'data-type': e.type,
          class:
            e.type === 'call.attempt' && (e.data as { outcome?: string }).outcome === 'fault' ? 'fault' : '',
        },
        `${shortTime(e.at)}  ${e.type}  ${eventText(e)}`,
      ),
    ),
  );
}

/** The filter redraws the list as it is typed; a click on a row shows its event (`onEvent`). */
export function listenForEventList(onEvent: (e: VizEvent) => void): void {
  byId('events-filter').addEventListener('input', (e) => {
    view.filter = (e.target as HTMLInputElement).value;
    renderEvents();
  });
  byId('events').addEventListener('click', (e) => {
    const li = (e.target as Element).closest('li[data-i]');
    const ev = li ? shownEvents[Number(li.getAttribute('data-i'))] : undefined;
    if (ev) onEvent(ev);
  });
}
