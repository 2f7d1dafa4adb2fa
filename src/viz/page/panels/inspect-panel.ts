import type { VizEvent } from '../../viz-state-types.ts';
import { byId, h } from '../page-dom.ts';
import { own } from '../page-json.ts';
import { view } from '../page-view.ts';
import { scrubTo } from '../replay-scrubber.ts';
import { clockText, seconds, shortTime } from '../time-format.ts';
import type { TimelinePick } from '../timeline-types.ts';
import { select } from './detail-panel.ts';

/*
 * Picks (a marker, a call, a state, an event): their details and the agent at that instant; the agent is
 * selected and, in replay, the whole page moves to that instant.
 */

/** The agent's state and latest fault at `t`, from its whole history. */
function agentAt(name: string, t: number): string {
  const a = own(view.history.agents, name);
  if (!a) return '';
  const seg = [...a.segments].reverse().find((g) => g.from <= t);
  const fault = [...a.markers].reverse().find((m) => m.at <= t);
  const turns = a.calls.filter((c) => c.to <= t).length;
  return [
    `${name} at ${clockText(t)}: ${seg?.state ?? 'idle'}${seg ? ` since ${shortTime(seg.from)}` : ''}`,
    fault
      ? `latest fault: ${fault.status ?? ''} ${fault.kind} on ${fault.endpoint ?? '?'} at ${shortTime(fault.at)}`
      : 'no fault yet',
    `${turns} upstream calls so far`,
  ].join('\n');
}

export function showPick(pick: TimelinePick): void {
  view.pick = pick;
  const box = byId('inspect');
  const rows: [string, string][] = [];
  if (pick.kind === 'marker') {
    const m = pick.marker;
    rows.push(
      ['fault', m.kind],
      ['status', m.status === null ? '—' : String(m.status)],
      ['endpoint', m.endpoint ?? '—'],
      ['Retry-After', m.retryAfterMs === null ? 'none' : seconds(m.retryAfterMs)],
      ['at', clockText(m.at)],
    );
    const call = own(view.history.agents, pick.agent)?.calls.find(
      (c) => c.to === m.at && c.endpoint === m.endpoint,
    );
    if (call)
      rows.push(
        ['latency', call.latencyMs === null ? '—' : `${call.latencyMs} ms`],
        ['waited for token', call.waitMs === null ? '—' : `${call.waitMs} ms`],
        ['attempt', String(call.attempt)],
      );
  } else if (pick.kind === 'call') {
    const c = pick.call;
    rows.push(
      ['call', c.outcome === 'ok' ? 'ok' : 'fault'],
      ['fault', c.outcome === 'ok' ? '—' : c.kind],
      ['status', c.status === null ? '—' : String(c.status)],
      ['endpoint', c.endpoint ?? '—'],
      ['latency', c.latencyMs === null ? '—' : `${c.latencyMs} ms`],
      ['waited for token', c.waitMs === null ? '—' : `${c.waitMs} ms`],
      ['attempt', String(c.attempt)],
      ['Retry-After', c.retryAfterMs === null ? 'none' : seconds(c.retryAfterMs)],
      ['from', clockText(c.from)],
      ['to', clockText(c.to)],
    );
  } else {
    rows.push(
      ['state', pick.segment.state],
      ['from', clockText(pick.segment.from)],
      ['to', pick.segment.to === null ? 'now' : clockText(pick.segment.to)],
    );
  }
  box.replaceChildren(
    h('h3', { 'data-testid': 'inspect-title' }, `${pick.kind} · ${pick.agent}`),
    h(
      'table',
      { 'data-testid': 'inspect-table' },
      ...rows.map(([k, v]) =>
        h(
          'tr',
          {},
          h('th', {}, k),
          h('td', { 'data-testid': `inspect-${k.replace(/\W+/g, '-').toLowerCase()}` }, v),
        ),
      ),
    ),
    h('pre', { 'data-testid': 'inspect-agent' }, agentAt(pick.agent, pick.at)),
  );
  select(pick.agent);
  // Replay: the whole page moves to that instant (cards, endpoints and tokens as they were).
  if (view.mode === 'replay') scrubTo(pick.at);
}

export function showEvent(e: VizEvent): void {
  const box = byId('inspect');
  box.replaceChildren(
    h('h3', { 'data-testid': 'inspect-title' }, `event · ${e.type}`),
    h('pre', {}, JSON.stringify(e, null, 2)),
    e.agent ? h('pre', { 'data-testid': 'inspect-agent' }, agentAt(e.agent, e.at)) : '',
  );
  if (e.agent) select(e.agent);
  if (view.mode === 'replay') scrubTo(e.at);
}
