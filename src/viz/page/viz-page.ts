import type { VizAgentDetail, VizTurn } from '../live-source.ts';
import type { VizChart } from '../statechart-graph.ts';
import type { VizPageConfig } from '../viz-server.ts';
import {
  type VizEndpoint,
  type VizEvent,
  type VizEventRecord,
  type VizState,
  breakerLabel,
  emptyVizState,
  eventFromRecord,
  stateAt,
  applyEvent,
} from '../viz-state.ts';
import { layoutChart } from './statechart-layout.ts';

/*
 * The visualizer page. Live: folds the SSE feed (/api/live) with the same reducer as the server.
 * Replay (?run=<id>): loads the run's event log and shows the fold of the events at or before the
 * scrubber's instant. Every element a test reads has a stable data-testid.
 */

const STATES = ['idle', 'queued', 'calling', 'fallback', 'tools', 'cooling', 'degraded', 'stopped'];
const SVG = 'http://www.w3.org/2000/svg';

type Attrs = Record<string, string | number | boolean | undefined | null>;
type Child = Node | string | null | undefined | false;

function h(tag: string, attrs: Attrs = {}, ...children: Child[]): HTMLElement {
  const el = document.createElement(tag);
  setAttrs(el, attrs);
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

function s(tag: string, attrs: Attrs = {}, ...children: Child[]): SVGElement {
  const el = document.createElementNS(SVG, tag);
  setAttrs(el, attrs);
  for (const c of children) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

function setAttrs(el: Element, attrs: Attrs): void {
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    el.setAttribute(k, v === true ? '' : String(v));
  }
}

function byId(id: string): HTMLElement {
  return document.getElementById(id)!;
}

function testid(id: string): HTMLElement {
  return document.querySelector(`[data-testid="${CSS.escape(id)}"]`)!;
}

function clockText(t: number | null): string {
  if (t === null || !Number.isFinite(t)) return '—';
  return `${new Date(t).toISOString().replace('T', ' ').slice(0, 23)}Z`;
}

function seconds(ms: number): string {
  return `${(Math.max(0, ms) / 1000).toFixed(1)} s`;
}

async function getJson<T>(path: string): Promise<T> {
  const res = await fetch(path, { headers: { accept: 'application/json' } });
  const body = (await res.json()) as T & { error?: string };
  if (!res.ok) throw new Error(body.error ?? `${res.status} ${path}`);
  return body;
}

// ---------------------------------------------------------------------------------------------------

interface View {
  mode: 'live' | 'replay' | 'index';
  runId: string | null;
  state: VizState;
  /** The instant shown: live = latest event/sample time; replay = the scrubber. */
  now: number | null;
  selected: string | null;
  chart: VizChart | null;
  detailKey: string;
  /** Replay: the run's first and last event times (the timeline spans the whole run). */
  span: { start: number; end: number } | null;
}

const view: View = {
  mode: 'index',
  runId: null,
  state: emptyVizState(),
  now: null,
  selected: null,
  chart: null,
  detailKey: '',
  span: null,
};

let frame = 0;
function scheduleRender(): void {
  if (frame) return;
  frame = requestAnimationFrame(() => {
    frame = 0;
    render();
  });
}

function render(): void {
  const { state } = view;
  testid('clock').textContent = clockText(view.now);
  testid('run-id').textContent = view.runId ? `run ${view.runId}` : '';
  renderAgents(state);
  renderTokens(state);
  renderEndpoints(state);
  renderChart(state);
  renderTimeline(state);
  renderRecent(state);
  void renderDetail(state);
}

function agentNames(state: VizState): string[] {
  return Object.keys(state.agents).sort();
}

function renderAgents(state: VizState): void {
  const box = byId('agents');
  box.replaceChildren();
  for (const name of agentNames(state)) {
    const a = state.agents[name]!;
    const countdown =
      a.state === 'cooling' && a.coolingUntil !== null && view.now !== null
        ? h('span', { 'data-testid': `agent-${name}-countdown` }, ` ${seconds(a.coolingUntil - view.now)}`)
        : null;
    const card = h(
      'div',
      {
        class: `agent s-${a.state}${view.selected === name ? ' selected' : ''}`,
        'data-testid': `agent-${name}`,
        'data-state': a.state,
        role: 'button',
        tabindex: 0,
      },
      h('div', {}, h('span', { class: 'name' }, name), ' ', h('span', { class: 'meta' }, a.tier ?? '')),
      h(
        'div',
        {},
        h('span', { class: `state-pill s-${a.state}`, 'data-testid': `agent-${name}-state` }, a.state),
        a.path && a.path !== a.state ? h('span', { class: 'meta' }, ` ${a.path}`) : null,
        countdown,
      ),
      h(
        'div',
        { class: 'meta' },
        `chain ${a.chain ?? '?'} · last `,
        h('span', { 'data-testid': `agent-${name}-endpoint` }, a.lastEndpoint ?? '—'),
        ` · turns ${a.turns}${a.degradedTurns ? ` (${a.degradedTurns} degraded)` : ''}`,
      ),
    );
    card.addEventListener('click', () => select(name));
    card.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' || e.key === ' ') select(name);
    });
    box.append(card);
  }
  if (box.childElementCount === 0) box.append(h('p', { class: 'muted' }, 'no agents yet'));
  const legend = h('div', { class: 'legend' });
  for (const st of STATES.slice(0, 7)) legend.append(h('span', { class: `state-pill s-${st}` }, st));
  box.append(legend);
}

function renderTokens(state: VizState): void {
  const t = state.tokens;
  const box = byId('tokens');
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
        h(
          'td',
          { 'data-testid': `tokens-queue-${tier}` },
          ((Object.hasOwn(t.queue, tier) ? t.queue[tier] : undefined) ?? []).join(', ') || '—',
        ),
      ),
    );
  box.replaceChildren(
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

function bucketCell(id: string, name: string, b: VizEndpoint['rpm']): HTMLElement {
  if (!b || b.available === null) return h('td', { 'data-testid': `endpoint-${id}-${name}` }, '—');
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

function renderEndpoints(state: VizState): void {
  const now = view.now ?? 0;
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

function renderChart(state: VizState): void {
  const box = byId('chart');
  const chart = view.chart;
  if (!chart) return;
  const agent = view.selected
    ? Object.hasOwn(state.agents, view.selected)
      ? state.agents[view.selected]
      : undefined
    : agentNames(state).map((n) => state.agents[n]!)[0];
  testid('chart-agent').textContent = agent ? `— ${agent.name}: ${agent.path ?? agent.state}` : '';
  const layout = layoutChart(chart);
  const active = new Set<string>();
  if (agent) {
    const path = agent.path ?? agent.state;
    const parts = path.split('.');
    for (let i = 1; i <= parts.length; i++) active.add(parts.slice(0, i).join('.'));
  }
  const svg = s('svg', {
    class: 'chart',
    width: '100%',
    viewBox: `0 0 ${layout.width} ${layout.height}`,
    'data-agent': agent?.name ?? '',
  });
  svg.append(
    s(
      'defs',
      {},
      s(
        'marker',
        {
          id: 'arrow',
          viewBox: '0 0 10 10',
          refX: 9,
          refY: 5,
          markerWidth: 7,
          markerHeight: 7,
          orient: 'auto',
        },
        s('path', { d: 'M0,0 L10,5 L0,10 z', class: 'arrow-head' }),
      ),
    ),
  );
  // Transitions first, states on top; the transitions out of the active state are lit and labelled.
  const leaf = agent ? (agent.path ?? agent.state) : '';
  const lit = (source: string) => agent !== undefined && (source === leaf || leaf.startsWith(`${source}.`));
  for (const a of layout.arrows) {
    const on = lit(a.source);
    const first = a.events[0] ?? '';
    const label = (first.split(' [')[0] ?? first) + (a.events.length > 1 ? ` +${a.events.length - 1}` : '');
    svg.append(
      s(
        'g',
        { class: `transition${on ? ' lit' : ''}`, 'data-testid': `chart-edge-${a.source}-${a.target}` },
        s('title', {}, `${a.source} → ${a.target}\n${a.events.join('\n')}`),
        s('path', { class: 'edge', d: a.d, 'marker-end': 'url(#arrow)' }),
        on ? s('text', { class: 'edge-label', x: a.labelX, y: a.labelY }, label) : null,
      ),
    );
  }
  for (const b of layout.boxes) {
    const top = b.path.split('.')[0]!;
    svg.append(
      s(
        'g',
        {
          class: `node${b.compound ? ' compound' : ''}${active.has(b.path) ? ' active' : ''} s-${top}`,
          'data-testid': `chart-state-${b.path}`,
          'data-active': active.has(b.path) ? 'true' : 'false',
        },
        s('rect', { x: b.x, y: b.y, width: b.w, height: b.h, rx: 5 }),
        s('text', { x: b.x + 8, y: b.y + (b.compound ? 17 : 15) }, b.key),
        b.invokes.length > 0 && !b.compound
          ? s('text', { class: 'invoke', x: b.x + 8, y: b.y + 28 }, `invokes ${b.invokes.join(', ')}`)
          : null,
      ),
    );
  }
  box.replaceChildren(svg);
}

function renderTimeline(state: VizState): void {
  const names = agentNames(state);
  const box = byId('timeline');
  const end = view.now;
  const starts = names.flatMap((n) => state.agents[n]!.segments.map((g) => g.from));
  if (end === null || starts.length === 0) {
    box.replaceChildren(h('p', { class: 'muted' }, 'no state changes yet'));
    return;
  }
  const start = view.span?.start ?? Math.min(...starts);
  const last = view.span?.end ?? end;
  const span = Math.max(1, last - start);
  const width = Math.max(600, box.clientWidth - 4);
  const left = 130;
  const lane = 22;
  const plot = width - left - 10;
  const x = (t: number) => left + ((Math.min(Math.max(t, start), last) - start) / span) * plot;
  const svg = s('svg', { width, height: names.length * lane + 24 });
  names.forEach((name, i) => {
    const a = state.agents[name]!;
    const y = 4 + i * lane;
    const g = s('g', { 'data-testid': `timeline-${name}` });
    g.append(s('text', { x: 4, y: y + 13 }, name));
    g.append(s('rect', { class: 'lane-bg', x: left, y, width: plot, height: lane - 6 }));
    for (const seg of a.segments) {
      const to = seg.to ?? end;
      if (seg.from > end) continue;
      g.append(
        s(
          'rect',
          {
            class: `seg s-${seg.state}`,
            x: x(seg.from),
            y,
            width: Math.max(1, x(to) - x(seg.from)),
            height: lane - 6,
            'data-state': seg.state,
          },
          s(
            'title',
            {},
            `${seg.state} ${clockText(seg.from)} → ${seg.to === null ? 'now' : clockText(seg.to)}`,
          ),
        ),
      );
    }
    for (const m of a.markers) {
      if (m.at > end) continue;
      const mx = x(m.at);
      g.append(
        s(
          'path',
          {
            class: `marker${m.rateLimited ? '' : ' other'}`,
            d: `M${mx - 4},${y - 2} L${mx + 4},${y - 2} L${mx},${y + 6} z`,
            'data-testid': `marker-${name}`,
            'data-kind': m.kind,
            'data-status': m.status ?? '',
          },
          s('title', {}, `${m.status ?? ''} ${m.kind} on ${m.endpoint ?? '?'} at ${clockText(m.at)}`),
        ),
      );
    }
    svg.append(g);
  });
  const axisY = names.length * lane + 18;
  svg.append(s('text', { class: 'axis', x: left, y: axisY }, clockText(start)));
  svg.append(s('text', { class: 'axis', x: width - 170, y: axisY }, clockText(last)));
  if (view.span)
    svg.append(
      s('line', {
        class: 'cursor',
        x1: x(end),
        x2: x(end),
        y1: 0,
        y2: names.length * lane,
        'data-testid': 'timeline-cursor',
      }),
    );
  box.replaceChildren(svg);
}

function renderRecent(state: VizState): void {
  const list = byId('recent');
  list.replaceChildren(
    ...[...state.recent]
      .reverse()
      .slice(0, 25)
      .map((l) => h('li', {}, `${clockText(l.at).slice(11, 23)}  ${l.text}`)),
  );
}

// --- agent detail ----------------------------------------------------------------------------------

function select(name: string): void {
  view.selected = name;
  view.detailKey = '';
  scheduleRender();
}

function text(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { text?: unknown }).text === 'string')
    return (v as { text: string }).text;
  return JSON.stringify(v);
}

async function renderDetail(state: VizState): Promise<void> {
  const name = view.selected;
  if (!name) return;
  const agent = Object.hasOwn(state.agents, name) ? state.agents[name] : undefined;
  const key = `${name}:${agent?.turns ?? 0}:${state.run.committedRound}`;
  if (key === view.detailKey) return;
  view.detailKey = key;
  let detail: VizAgentDetail;
  try {
    if (view.mode === 'live')
      detail = await getJson<VizAgentDetail>(`/api/live/agents/${encodeURIComponent(name)}`);
    else {
      const run = encodeURIComponent(view.runId ?? '');
      const [turns, snapshot] = await Promise.all([
        getJson<VizTurn[]>(`/api/runs/${run}/turns?agent=${encodeURIComponent(name)}`),
        getJson<unknown>(`/api/runs/${run}/snapshots?agent=${encodeURIComponent(name)}`).catch(
          (e: Error) => ({ error: e.message }),
        ),
      ]);
      detail = { agent: name, turns, snapshot, memory: null };
    }
  } catch (e) {
    byId('detail').replaceChildren(
      h('p', { class: 'muted' }, `cannot load ${name}: ${(e as Error).message}`),
    );
    return;
  }
  if (view.selected !== name) return;
  // In replay, a turn belongs to the instant once its round is committed in the log.
  const committed = (t: VizTurn) =>
    view.mode !== 'replay' || t.round === null || t.round <= view.state.run.committedRound;
  const table = h(
    'table',
    { class: 'turns', 'data-testid': 'agent-turns' },
    h('tr', {}, ...['round', 'prompt', 'answer', 'endpoint', 'outcome'].map((c) => h('th', {}, c))),
  );
  for (const t of detail.turns) {
    table.append(
      h(
        'tr',
        {
          'data-testid': 'turn-row',
          'data-degraded': t.degraded ? 'true' : 'false',
          'data-committed': committed(t) ? 'true' : 'false',
          class: committed(t) ? '' : 'later',
        },
        h('td', {}, t.round === null ? '—' : `${t.round}${committed(t) ? '' : ' (committed later)'}`),
        h('td', { 'data-testid': 'turn-prompt' }, text(t.prompt).slice(0, 400)),
        h('td', { 'data-testid': 'turn-answer' }, text(t.answer).slice(0, 600)),
        h('td', { 'data-testid': 'turn-endpoint' }, t.endpoint ?? '—'),
        h(
          'td',
          { 'data-testid': 'turn-outcome' },
          t.degraded ? h('span', { class: 'degraded-flag' }, 'DEGRADED') : (t.outcome ?? ''),
          t.faults.length ? ` (faults: ${t.faults.join(', ')})` : '',
        ),
      ),
    );
  }
  byId('detail').replaceChildren(
    h('h3', { 'data-testid': 'agent-detail-name' }, name),
    detail.turns.length ? table : h('p', { class: 'muted', 'data-testid': 'agent-turns' }, 'no turns yet'),
    h('h4', {}, 'Last snapshot'),
    h(
      'pre',
      { 'data-testid': 'agent-snapshot' },
      JSON.stringify(detail.snapshot, null, 2)?.slice(0, 20_000) ?? 'none',
    ),
  );
}

// --- modes -----------------------------------------------------------------------------------------

function startLive(runId: string | null): void {
  view.mode = 'live';
  view.runId = runId;
  testid('mode').textContent = 'live';
  const status = testid('connection');
  const source = new EventSource('/api/live');
  source.addEventListener('init', (e) => {
    const init = JSON.parse((e as MessageEvent<string>).data) as { state: VizState; runId: string | null };
    view.state = init.state;
    view.runId = init.runId ?? view.runId;
    view.now = init.state.now;
    status.textContent = 'connected';
    status.setAttribute('data-connected', 'true');
    scheduleRender();
  });
  source.addEventListener('message', (e) => {
    const event = JSON.parse((e as MessageEvent<string>).data) as VizEvent;
    view.state = applyEvent(view.state, event);
    view.now = view.state.now;
    scheduleRender();
  });
  source.addEventListener('error', () => {
    status.textContent = 'reconnecting…';
    status.setAttribute('data-connected', 'false');
  });
}

async function startReplay(runId: string): Promise<void> {
  view.mode = 'replay';
  view.runId = runId;
  testid('mode').textContent = 'replay';
  const run = encodeURIComponent(runId);
  const record = await getJson<{ config?: { concurrency?: { limit?: unknown } } }>(`/api/runs/${run}`);
  const limit = record.config?.concurrency?.limit;
  const initial = emptyVizState({ limit: typeof limit === 'number' ? limit : null });
  const events: VizEvent[] = [];
  for (let after = 0; ; ) {
    const page = await getJson<(VizEventRecord & { seq: number })[]>(
      `/api/runs/${run}/events?afterSeq=${after}&limit=5000`,
    );
    for (const r of page) events.push(eventFromRecord(r));
    if (page.length < 5000) break;
    after = page[page.length - 1]!.seq;
  }
  const times = events.map((e) => Number(e.at)).filter(Number.isFinite);
  const first = times.length ? Math.min(...times) : 0;
  const last = times.length ? Math.max(...times) : 0;
  view.span = { start: first, end: last };
  byId('replay-bar').hidden = false;
  const scrubber = byId('scrubber') as HTMLInputElement;
  scrubber.min = String(first);
  scrubber.max = String(last);
  scrubber.value = String(last);
  const show = () => {
    const t = Number(scrubber.value);
    view.state = stateAt(events, t, initial);
    view.now = t;
    testid('scrubber-time').textContent = clockText(t);
    testid('scrubber-events').textContent = `${view.state.applied} / ${events.length} events`;
    scrubber.setAttribute('data-at', String(t));
    render();
  };
  scrubber.addEventListener('input', show);
  scrubber.addEventListener('change', show);
  show();
}

async function startIndex(): Promise<void> {
  view.mode = 'index';
  testid('mode').textContent = 'runs';
  byId('main').hidden = true;
  byId('runs-panel').hidden = false;
  const runs =
    await getJson<
      {
        runId: string;
        scenario: string;
        status: string;
        currentRound: number;
        totalRounds: number;
        createdAt: number;
      }[]
    >('/api/runs');
  const table = testid('runs');
  table.replaceChildren(
    h('tr', {}, ...['run', 'scenario', 'status', 'rounds', 'created'].map((c) => h('th', {}, c))),
  );
  for (const r of runs)
    table.append(
      h(
        'tr',
        { 'data-testid': `run-${r.runId}` },
        h('td', {}, h('a', { href: `/?run=${encodeURIComponent(r.runId)}` }, r.runId)),
        h('td', {}, r.scenario),
        h('td', {}, r.status),
        h('td', {}, `${r.currentRound} / ${r.totalRounds}`),
        h('td', {}, clockText(r.createdAt)),
      ),
    );
  if (runs.length === 0) table.append(h('tr', {}, h('td', {}, 'no runs in this store')));
}

async function main(): Promise<void> {
  const config = await getJson<VizPageConfig>('/api/config');
  view.chart = await getJson<VizChart>('/api/chart');
  const asked = new URLSearchParams(location.search).get('run');
  if (asked && config.replay) return startReplay(asked);
  if (config.live) return startLive(config.liveRunId);
  if (config.runId && config.replay) return startReplay(config.runId);
  if (config.replay) return startIndex();
  testid('mode').textContent = 'nothing to show';
}

main().catch((e: unknown) => {
  testid('mode').textContent = 'error';
  testid('connection').textContent = e instanceof Error ? e.message : String(e);
});
