import type { VizAgentDetail, VizTurn } from '../viz-turn.ts';
import type { VizChart } from '../statechart-graph.ts';
import type { VizPageConfig } from '../viz-api.ts';
import type {
  VizAgent,
  VizCheck,
  VizEndpoint,
  VizEvent,
  VizEventRecord,
  VizState,
} from '../viz-state-types.ts';
import { applyEvent, emptyVizState } from '../viz-state.ts';
import { breakerLabel } from '../viz-event-handlers.ts';
import { eventFromRecord } from '../../core/stored-event.ts';
import { formatDuration, formatZonedDateTime } from '../../clock/format-time.ts';
import { layoutChart } from './statechart-layout.ts';
import { createTimeline, type Timeline, type TimelinePick } from './timeline-canvas.ts';

/*
 * The visualizer page. Live: folds the SSE feed (/api/live) with the same reducer as the server.
 * Replay (?run=<id>): loads the run's event log and shows the fold of the events at or before the
 * scrubber's instant; the timeline always shows the whole run (the same instant looks the same wherever
 * the scrubber is). Rendering is incremental: elements are built once and their text updated, the
 * timeline is one canvas, and live redraws are paced, so a storm's thousands of events a minute leave
 * the main thread free for clicks. Every element a test reads has a stable data-testid.
 */

const STATES = ['idle', 'queued', 'calling', 'fallback', 'tools', 'cooling', 'degraded', 'stopped'];
const SVG = 'http://www.w3.org/2000/svg';
/** Live redraws at most this often (real ms): enough for countdowns, cheap in a storm. */
const LIVE_FRAME_MS = 250;
/** Least real time between two reads of the selected agent's turns, live (ms). */
const DETAIL_REFETCH_MS = 2000;
/** Rows the event list shows at most (the newest that match, at or before the instant). */
const EVENT_ROWS = 120;

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

/** Sets text only when it changed (no layout work for the same text). */
function setText(el: Element, text: string): void {
  if (el.textContent !== text) el.textContent = text;
}

/** How times are written: the scenario's zone (when the run says it), UTC, or since the run started. */
const timeFmt: { mode: 'zone' | 'utc' | 'relative'; zone: string | null; origin: number | null } = {
  mode: 'utc',
  zone: null,
  origin: null,
};

function utcText(t: number): string {
  return `${new Date(t).toISOString().replace('T', ' ').slice(0, 23)}Z`;
}

function relativeText(t: number): string {
  const ms = t - (timeFmt.origin ?? t);
  const sign = ms < 0 ? '−' : '+';
  const a = Math.abs(ms);
  const hh = String(Math.floor(a / 3_600_000)).padStart(2, '0');
  const mm = String(Math.floor((a % 3_600_000) / 60_000)).padStart(2, '0');
  const ss = String(Math.floor((a % 60_000) / 1000)).padStart(2, '0');
  return `${sign}${hh}:${mm}:${ss}.${String(Math.floor(a % 1000)).padStart(3, '0')}`;
}

function clockText(t: number | null): string {
  if (t === null || !Number.isFinite(t)) return '—';
  if (timeFmt.mode === 'relative') return `${relativeText(t)} since start`;
  if (timeFmt.mode === 'zone' && timeFmt.zone)
    return `${formatZonedDateTime(t, timeFmt.zone, { milliseconds: true })} ${timeFmt.zone}`;
  return utcText(t);
}

/** The time of day alone (lists, tooltips), in the chosen way. */
function shortTime(t: number): string {
  if (timeFmt.mode === 'relative') return relativeText(t);
  if (timeFmt.mode === 'zone' && timeFmt.zone)
    return formatZonedDateTime(t, timeFmt.zone, { milliseconds: true }).slice(11);
  return utcText(t).slice(11, 23);
}

function seconds(ms: number): string {
  return `${(Math.max(0, ms) / 1000).toFixed(1)} s`;
}

async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const res = await fetch(path, { headers: { accept: 'application/json' }, ...(signal ? { signal } : {}) });
  const body = (await res.json()) as T & { error?: string };
  if (!res.ok) throw new Error(body.error ?? `${res.status} ${path}`);
  return body;
}

function own<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

// ---------------------------------------------------------------------------------------------------

interface View {
  mode: 'live' | 'replay' | 'index';
  runId: string | null;
  /** The state at the instant shown. */
  state: VizState;
  /** The whole history (replay: the fold of the whole log; live: the state now). */
  history: VizState;
  now: number | null;
  selected: string | null;
  chart: VizChart | null;
  /** The statecharts of the breaker and the supervisor (the agent's is `chart`). */
  charts: { breaker: VizChart | null; supervisor: VizChart | null };
  /** Which machine the chart panel draws. */
  machine: 'agent' | 'breaker' | 'supervisor';
  /** Replay: the run's first and last event times. */
  span: { start: number; end: number } | null;
  /** The events the list shows (runtime events, no samples), in log order. */
  log: VizEvent[];
  filter: string;
  /** When each turn completed (`agent|round|itemId` → at), from the log: the detail follows the scrubber. */
  turnAt: Map<string, number>;
  /** When each round was committed, from the log. */
  roundAt: Map<number, number>;
  /** The selected agent's stored turns and snapshot, fetched once per selection (and per commit live). */
  detail: { agent: string; round: number; turns: number; fetchedAt: number; data: VizAgentDetail } | null;
  pick: TimelinePick | null;
}

const view: View = {
  mode: 'index',
  runId: null,
  state: emptyVizState(),
  history: emptyVizState(),
  now: null,
  selected: null,
  chart: null,
  charts: { breaker: null, supervisor: null },
  machine: 'agent',
  span: null,
  log: [],
  filter: '',
  turnAt: new Map(),
  roundAt: new Map(),
  detail: null,
  pick: null,
};

let timeline: Timeline | null = null;
let frame = 0;
let lastFrame = 0;
let pace: ReturnType<typeof setTimeout> | undefined;

function scheduleRender(): void {
  if (frame || pace) return;
  const wait = view.mode === 'live' ? lastFrame + LIVE_FRAME_MS - performance.now() : 0;
  if (wait > 0) {
    pace = setTimeout(() => {
      pace = undefined;
      scheduleRender();
    }, wait);
    return;
  }
  frame = requestAnimationFrame(() => {
    frame = 0;
    lastFrame = performance.now();
    render();
  });
}

function render(): void {
  const { state } = view;
  setText(testid('clock'), clockText(view.now));
  setText(testid('run-id'), view.runId ? `run ${view.runId}` : '');
  renderRun(state);
  renderAgents(state);
  renderTokens(state);
  renderEndpoints(state);
  renderChart(state);
  renderTimeline();
  renderEvents();
  renderDetail(state);
}

function agentNames(state: VizState): string[] {
  return Object.keys(state.agents).sort();
}

// --- run progress and end ---------------------------------------------------------------------------

let checksKey = '';
function renderRun(state: VizState): void {
  const run = state.run;
  const rounds = run.rounds;
  setText(
    testid('run-round'),
    rounds
      ? `round ${Math.max(run.round, run.committedRound)} / ${rounds} (${run.committedRound} committed)`
      : '',
  );
  const progress = testid('run-progress') as HTMLProgressElement;
  progress.max = rounds ?? 1;
  progress.value = rounds ? run.committedRound : 0;
  const finished = run.finishedAt !== null && (view.now === null || run.finishedAt <= view.now);
  const status = testid('run-status');
  setText(status, finished ? `run finished: ${run.status}` : run.status === 'unknown' ? '' : run.status);
  status.setAttribute('data-finished', finished ? 'true' : 'false');
  const checks = finished ? run.checks : null;
  const key = JSON.stringify(checks);
  if (key === checksKey) return;
  checksKey = key;
  const box = testid('run-checks');
  if (!checks || checks.length === 0) {
    box.replaceChildren();
    return;
  }
  const fails = checks.filter((c) => c.pass === false).length;
  box.replaceChildren(
    h(
      'span',
      { class: fails ? 'verdict fail' : 'verdict pass', 'data-testid': 'run-verdict' },
      fails ? `FAIL (${fails} of ${checks.length} checks)` : `PASS (${checks.length} checks)`,
    ),
    ...checks.map((c: VizCheck) =>
      h(
        'span',
        {
          class: `check ${c.pass === true ? 'pass' : c.pass === false ? 'fail' : 'info'}`,
          'data-testid': `check-${c.id}`,
          title: `${c.name}: ${c.value ?? '—'} ${c.unit}${c.op ? ` (${c.op} ${c.threshold})` : ''}`,
        },
        `${c.pass === true ? 'PASS' : c.pass === false ? 'FAIL' : 'info'} ${c.name}`,
      ),
    ),
  );
}

// --- agents -----------------------------------------------------------------------------------------

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

/** Until when an endpoint (cooldown, credit disable, OPEN breaker) or the agent's own wait holds it back. */
function holdsUntil(a: VizAgent, state: VizState, endpoint: string | null): number {
  let until = a.state === 'cooling' && a.coolingUntil !== null ? a.coolingUntil : 0;
  const ep = endpoint ? own(state.endpoints, endpoint) : undefined;
  if (ep) {
    until = Math.max(until, ep.cooldownUntil, ep.disabledUntil);
    if (ep.breaker === 'open' && ep.openUntil !== null) until = Math.max(until, ep.openUntil);
  }
  return until;
}

/** Why an agent is where it is, in one line: its fault, where, and how long until it may try again. */
function reasonText(a: VizAgent, state: VizState, now: number): string {
  if (!['fallback', 'degraded', 'cooling', 'queued'].includes(a.state)) return '';
  // Queued is the normal wait for a token: a reason only while its own fault still holds it back.
  if (a.state === 'queued' && !(a.reason && holdsUntil(a, state, a.reason.endpoint) > now)) return '';
  // No fault of its own: it moved on because an endpoint was already out (OPEN, disabled, cooling);
  // name the one that failed last.
  const skipped = a.reason
    ? undefined
    : Object.values(state.endpoints)
        .filter(
          (e) => e.lastFault && (e.breaker !== 'closed' || e.disabledUntil > now || e.cooldownUntil > now),
        )
        .sort((x, y) => y.lastFault!.at - x.lastFault!.at)[0];
  const r =
    a.reason ??
    (skipped
      ? {
          at: skipped.lastFault!.at,
          kind: skipped.lastFault!.kind,
          endpoint: skipped.id,
          status: skipped.lastFault!.status,
          retryAfterMs: null,
        }
      : null);
  if (!r) return '';
  const ep = r.endpoint ? own(state.endpoints, r.endpoint) : undefined;
  const until = holdsUntil(a, state, r.endpoint);
  const parts = [
    `${r.status !== null ? `${r.status} ` : ''}${r.kind} on ${r.endpoint ?? '?'}`,
    ep && ep.breaker !== 'closed' ? `breaker ${breakerLabel(ep.breaker)}` : '',
    r.retryAfterMs !== null ? `Retry-After ${seconds(r.retryAfterMs)}` : '',
    until > now ? `cooldown ${seconds(until - now)} left` : 'cooldown over',
  ];
  return parts.filter(Boolean).join(' · ');
}

function renderAgents(state: VizState): void {
  const box = byId('agents');
  const names = agentNames(state);
  const now = view.now ?? 0;
  if (names.length === 0 && cards.size === 0) {
    if (!box.querySelector('.muted')) box.replaceChildren(h('p', { class: 'muted' }, 'no agents yet'));
    return;
  }
  for (const name of names) {
    const a = state.agents[name]!;
    let card = cards.get(name);
    if (!card) {
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
      card = { el, state: st, path, countdown, reason, endpoint, meta };
      cards.set(name, card);
      // Keep the cards sorted: insert before the first later name.
      const after = [...cards.keys()].sort().find((n) => n > name);
      const legend = box.querySelector('.legend');
      box.insertBefore(el, (after ? cards.get(after)?.el : null) ?? legend ?? null);
    }
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

// --- tokens and endpoints (small: rebuilt only when what they show changed) -------------------------

let tokensKey = '';
function renderTokens(state: VizState): void {
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

let endpointsKey = '';
function renderEndpoints(state: VizState): void {
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

// --- statechart (redrawn only when the lit state changes) --------------------------------------------

let chartKey = '';
/** What the chart panel draws now: the machine, whose it is, and its current state path. */
function chartSubject(state: VizState): { chart: VizChart | null; who: string; leaf: string } {
  if (view.machine === 'supervisor') {
    const finished = state.run.finishedAt !== null && (view.now === null || state.run.finishedAt <= view.now);
    return {
      chart: view.charts.supervisor,
      who: 'supervisor',
      leaf: finished ? 'stopped' : state.run.status === 'unknown' && state.applied === 0 ? '' : 'running',
    };
  }
  const selected = view.selected ? own(state.agents, view.selected) : undefined;
  if (view.machine === 'breaker') {
    // The breaker of the selected agent's endpoint, else the first one not CLOSED, else the first.
    const ids = Object.keys(state.endpoints).sort();
    const id =
      (selected?.lastEndpoint && own(state.endpoints, selected.lastEndpoint)
        ? selected.lastEndpoint
        : undefined) ??
      ids.find((i) => state.endpoints[i]!.breaker !== 'closed') ??
      ids[0];
    const ep = id ? state.endpoints[id] : undefined;
    return {
      chart: view.charts.breaker,
      who: ep ? `breaker of ${ep.id}` : 'breaker',
      leaf: ep?.breaker ?? '',
    };
  }
  const agent = selected ?? agentNames(state).map((n) => state.agents[n]!)[0];
  return { chart: view.chart, who: agent?.name ?? '', leaf: agent ? (agent.path ?? agent.state) : '' };
}

function renderChart(state: VizState): void {
  const box = byId('chart');
  const { chart, who, leaf } = chartSubject(state);
  if (!chart) return;
  const key = `${view.machine}:${who}:${leaf}:${box.clientWidth}`;
  if (key === chartKey) return;
  chartKey = key;
  setText(testid('chart-agent'), who ? `— ${who}: ${leaf || '—'}` : '');
  const agent = leaf ? { name: who } : undefined;
  const layout = layoutChart(chart);
  const active = new Set<string>();
  if (agent) {
    const parts = leaf.split('.');
    for (let i = 1; i <= parts.length; i++) active.add(parts.slice(0, i).join('.'));
  }
  const svg = s('svg', {
    class: 'chart',
    width: '100%',
    viewBox: `0 0 ${layout.width} ${layout.height}`,
    'data-agent': agent?.name ?? '',
    'data-machine': view.machine,
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
  const lit = (source: string) => agent !== undefined && (source === leaf || leaf.startsWith(`${source}.`));
  const labels: SVGElement[] = [];
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
      ),
    );
    if (on) labels.push(s('text', { class: 'edge-label', x: a.labelX, y: a.labelY }, label));
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
          : b.entry.length > 0 && !b.compound
            ? s('text', { class: 'invoke', x: b.x + 8, y: b.y + 28 }, `runs ${b.entry.join(', ')}`)
            : null,
      ),
    );
  }
  // Labels last, over the boxes, so no box hides a lit transition's event.
  for (const l of labels) svg.append(l);
  box.replaceChildren(svg);
}

// --- timeline ---------------------------------------------------------------------------------------

function renderTimeline(): void {
  const history = view.history;
  const agents = agentNames(history).map((n) => history.agents[n]!);
  const now = view.now;
  const canvas = byId('timeline-canvas') as HTMLCanvasElement;
  if (now === null || agents.length === 0) {
    canvas.hidden = true;
    return;
  }
  canvas.hidden = false;
  const first = Math.min(...agents.map((a) => a.segments[0]?.from ?? now));
  const span = view.span
    ? { from: view.span.start, to: view.span.end }
    : { from: history.run.startedAt ?? first, to: Math.max(now, first + 1) };
  timeFmt.origin ??= span.from;
  timeline?.draw({
    agents,
    span,
    now,
    end: view.span ? view.span.end : now,
    cursor: view.mode === 'replay',
    label: shortTime,
  });
}

// --- events list ------------------------------------------------------------------------------------

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
    default:
      return `${who}${who ? ': ' : ''}${Object.entries(d)
        .filter(([, v]) => typeof v !== 'object')
        .map(([k, v]) => `${k}=${v}`)
        .join(' ')}`;
  }
}

let eventsKey = '';
let shownEvents: VizEvent[] = [];
function renderEvents(): void {
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

// --- picks (a marker, a call, a state, an event): details and the agent at that instant ---------------

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

function showPick(pick: TimelinePick): void {
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

function showEvent(e: VizEvent): void {
  const box = byId('inspect');
  box.replaceChildren(
    h('h3', { 'data-testid': 'inspect-title' }, `event · ${e.type}`),
    h('pre', {}, JSON.stringify(e, null, 2)),
    e.agent ? h('pre', { 'data-testid': 'inspect-agent' }, agentAt(e.agent, e.at)) : '',
  );
  if (e.agent) select(e.agent);
  if (view.mode === 'replay') scrubTo(e.at);
}

// --- agent detail (fetched once per selection; in step with the instant) ------------------------------

function select(name: string): void {
  if (view.selected !== name) {
    view.selected = name;
    // Answer the click at once: the selection and the detail's title, before any fetch or redraw.
    for (const [n, c] of cards) c.el.classList.toggle('selected', n === name);
    byId('detail').replaceChildren(
      h('h3', { 'data-testid': 'agent-detail-name' }, name),
      h('p', { class: 'muted', 'data-testid': 'agent-turns' }, 'loading…'),
    );
    detailKey = '';
    void loadDetail(name);
  }
  scheduleRender();
}

function text(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v && typeof v === 'object' && typeof (v as { text?: unknown }).text === 'string')
    return (v as { text: string }).text;
  return JSON.stringify(v);
}

let detailLoad: AbortController | undefined;
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

let detailKey = '';
function renderDetail(state: VizState): void {
  const name = view.selected;
  if (!name) return;
  const detail = view.detail?.agent === name ? view.detail : null;
  const now = view.now ?? Number.POSITIVE_INFINITY;
  const agent = own(state.agents, name);
  // Live: the turns are read again once a round is committed or the agent finished turns since, at most
  // every DETAIL_REFETCH_MS; never on every event.
  if (view.mode === 'live' && detail) {
    const stale = state.run.committedRound > detail.round || (agent?.turns ?? 0) > detail.turns;
    const wait = detail.fetchedAt + DETAIL_REFETCH_MS - performance.now();
    if (stale && wait <= 0) {
      detail.round = state.run.committedRound;
      detail.turns = agent?.turns ?? 0;
      detail.fetchedAt = performance.now();
      void loadDetail(name);
    } else if (stale) setTimeout(scheduleRender, wait);
  }
  const key = `${name}:${detail ? 'y' : 'n'}:${detail?.data.turns.length ?? 0}:${agent?.turns ?? 0}:${view.mode === 'replay' ? now : ''}`;
  if (key === detailKey || !detail) return;
  detailKey = key;
  // When a stored turn belongs to the instant: when it completed (log), else when its round was committed.
  const at = (t: VizTurn) =>
    (t.round !== null && t.itemId !== null ? view.turnAt.get(`${name}|${t.round}|${t.itemId}`) : undefined) ??
    (t.round !== null ? view.roundAt.get(t.round) : undefined);
  // In step with the instant: a stored turn shows once it completed at or before it.
  const turns = detail.data.turns.filter((t) => view.mode !== 'replay' || (at(t) ?? 0) <= now);
  const stored = new Set(detail.data.turns.map((t) => `${t.round}|${t.itemId}`));
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
  const table = h(
    'table',
    { class: 'turns', 'data-testid': 'agent-turns' },
    h('tr', {}, ...['round', 'prompt', 'answer', 'endpoint', 'outcome'].map((c) => h('th', {}, c))),
  );
  for (const t of turns.slice(-50))
    table.append(
      h(
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
      ),
    );
  for (const e of pending.slice(-50)) {
    const d = e.data as { round?: number; outcome?: string; degraded?: boolean; attempts?: number };
    table.append(
      h(
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
      ),
    );
  }
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

// --- time: the scenario's zone, UTC or relative; and whether the clock is simulated ------------------

interface StoredRunConfig {
  readonly timeScale?: number;
  readonly origin?: number;
  readonly report?: { readonly timeZone?: string; readonly concurrencyLimit?: number };
  readonly concurrency?: { readonly limit?: number };
}

function configureTime(config: StoredRunConfig | undefined): void {
  const zone = config?.report?.timeZone ?? null;
  timeFmt.zone = zone;
  if (typeof config?.origin === 'number') timeFmt.origin = config.origin;
  const select = testid('time-mode') as HTMLSelectElement;
  const zoneOption = select.querySelector('option[value="zone"]') as HTMLOptionElement;
  zoneOption.disabled = zone === null;
  zoneOption.textContent = zone ? `scenario zone (${zone})` : 'scenario zone (not known)';
  timeFmt.mode = zone ? 'zone' : 'utc';
  select.value = timeFmt.mode;
  const scale = config?.timeScale;
  setText(
    testid('clock-note'),
    typeof scale === 'number' && scale !== 1
      ? `simulated clock: ${scale}× real time (times are the scenario's, not the wall's)`
      : '',
  );
}

function wireTime(): void {
  const select = testid('time-mode') as HTMLSelectElement;
  select.addEventListener('change', () => {
    timeFmt.mode = select.value as typeof timeFmt.mode;
    // Everything that writes a time is drawn again.
    checksKey = tokensKey = endpointsKey = chartKey = eventsKey = detailKey = '';
    if (view.mode === 'replay') showInstant();
    else render();
  });
}

async function loadRunConfig(runId: string): Promise<StoredRunConfig | undefined> {
  try {
    const run = await getJson<{ config?: StoredRunConfig }>(`/api/runs/${encodeURIComponent(runId)}`);
    return run.config ?? undefined;
  } catch {
    return undefined;
  }
}

// --- modes ------------------------------------------------------------------------------------------

function noteTurn(e: VizEvent): void {
  if (e.type === 'round.committed') view.roundAt.set(Number(e.data.round), e.at);
  if (e.type !== 'turn.completed') return;
  const d = e.data as { round?: number; itemId?: string };
  // Every agent works the same items: the key names the agent.
  if (d.round !== undefined && d.itemId !== undefined && e.agent)
    view.turnAt.set(`${e.agent}|${d.round}|${d.itemId}`, e.at);
}

function startLive(runId: string | null, config: VizPageConfig): void {
  view.mode = 'live';
  view.runId = runId;
  setText(testid('mode'), 'live');
  const status = testid('connection');
  const source = new EventSource('/api/live');
  let gone = false;
  source.addEventListener('init', (e) => {
    const init = JSON.parse((e as MessageEvent<string>).data) as { state: VizState; runId: string | null };
    // A new run on the same port is offered, never swapped in: this page keeps the run it showed.
    if (view.state.applied > 0 && init.runId !== view.runId) {
      source.close();
      const offer = testid('new-run');
      offer.hidden = false;
      offer.replaceChildren(
        `A new run${init.runId ? ` (${init.runId})` : ''} is live on this port: `,
        h('a', { href: '/', 'data-testid': 'new-run-open' }, 'open it'),
      );
      setText(status, 'this run is over; the server now serves another');
      status.setAttribute('data-connected', 'other-run');
      return;
    }
    gone = false;
    status.setAttribute('data-inits', String(Number(status.getAttribute('data-inits') ?? 0) + 1));
    view.state = init.state;
    view.history = init.state;
    const first = view.runId === null && init.runId !== null;
    view.runId = init.runId ?? view.runId;
    view.now = init.state.now;
    // A recorded run says its zone and time scale (the live page of a run with a store).
    if (first && config.replay)
      void loadRunConfig(init.runId!).then((c) => {
        configureTime(c);
        scheduleRender();
      });
    setText(status, 'connected');
    status.setAttribute('data-connected', 'true');
    scheduleRender();
  });
  source.addEventListener('message', (e) => {
    const event = JSON.parse((e as MessageEvent<string>).data) as VizEvent;
    view.state = applyEvent(view.state, event);
    view.history = view.state;
    view.now = view.state.now;
    if (event.type !== 'viz.sample') {
      view.log.push(event);
      noteTurn(event);
    }
    scheduleRender();
  });
  source.addEventListener('error', () => {
    if (gone) return;
    setText(status, 'reconnecting…');
    status.setAttribute('data-connected', 'false');
    // Is anyone there? A refused request means the server stopped: say so instead of waiting forever.
    fetch('/api/config', { signal: AbortSignal.timeout(3000) })
      .then((r) => {
        if (!r.ok) throw new Error(String(r.status));
      })
      .catch(() => {
        gone = true;
        setText(status, 'server gone');
        status.setAttribute('data-connected', 'gone');
      });
  });
}

let replayEvents: VizEvent[] = [];
let replayInitial: VizState = emptyVizState();
/** Folds every `CHECKPOINT` events kept, so a scrub folds at most that many. */
const CHECKPOINT = 500;
let checkpoints: { index: number; state: VizState }[] = [];

function replayStateAt(t: number): VizState {
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

function scrubTo(t: number): void {
  const scrubber = byId('scrubber') as HTMLInputElement;
  scrubber.value = String(t);
  showInstant();
}

function showInstant(): void {
  const scrubber = byId('scrubber') as HTMLInputElement;
  const t = Number(scrubber.value);
  view.state = replayStateAt(t);
  view.now = t;
  setText(testid('scrubber-time'), clockText(t));
  setText(testid('scrubber-events'), `${view.state.applied} / ${replayEvents.length} events`);
  scrubber.setAttribute('data-at', String(t));
  render();
}

async function startReplay(runId: string): Promise<void> {
  view.mode = 'replay';
  view.runId = runId;
  setText(testid('mode'), 'replay');
  const run = encodeURIComponent(runId);
  const record = await getJson<{ status?: string; config?: StoredRunConfig }>(`/api/runs/${run}`);
  configureTime(record.config);
  // A scenario run stores its limit with the report's settings; a hand-made run may say it directly.
  const limit = record.config?.concurrency?.limit ?? record.config?.report?.concurrencyLimit;
  replayInitial = emptyVizState({ limit: typeof limit === 'number' ? limit : null });
  const events: VizEvent[] = [];
  for (let after = 0; ; ) {
    const page = await getJson<(VizEventRecord & { seq: number })[]>(
      `/api/runs/${run}/events?afterSeq=${after}&limit=5000`,
    );
    for (const r of page) events.push(eventFromRecord(r));
    if (page.length < 5000) break;
    after = page[page.length - 1]!.seq;
  }
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
  const times = events.map((e) => Number(e.at)).filter(Number.isFinite);
  const first = times.length ? Math.min(...times) : 0;
  const last = times.length ? Math.max(...times) : 0;
  view.span = { start: first, end: last };
  byId('replay-bar').hidden = false;
  const scrubber = byId('scrubber') as HTMLInputElement;
  scrubber.min = String(first);
  scrubber.max = String(last);
  scrubber.value = String(last);
  scrubber.addEventListener('input', showInstant);
  scrubber.addEventListener('change', showInstant);
  // Steps: the previous / next event, the next fault; and play at a chosen speed.
  const times1 = [...new Set(times)].sort((a, b) => a - b);
  const faults = events
    .filter((e) => e.type === 'call.attempt' && (e.data as { outcome?: string }).outcome === 'fault')
    .map((e) => Number(e.at));
  const step = (to: number | undefined) => {
    if (to !== undefined) scrubTo(to);
  };
  byId('prev-event').addEventListener('click', () =>
    step([...times1].reverse().find((x) => x < Number(scrubber.value))),
  );
  byId('next-event').addEventListener('click', () => step(times1.find((x) => x > Number(scrubber.value))));
  byId('next-fault').addEventListener('click', () => step(faults.find((x) => x > Number(scrubber.value))));
  let playing: ReturnType<typeof setInterval> | undefined;
  byId('play').addEventListener('click', () => {
    if (playing) {
      clearInterval(playing);
      playing = undefined;
      setText(byId('play'), 'play');
      return;
    }
    setText(byId('play'), 'pause');
    let wall = performance.now();
    playing = setInterval(() => {
      const speed = Number((byId('speed') as HTMLSelectElement).value) || 1;
      const nowWall = performance.now();
      const next = Math.min(last, Number(scrubber.value) + (nowWall - wall) * speed);
      wall = nowWall;
      scrubTo(Math.round(next));
      if (next >= last && playing) {
        clearInterval(playing);
        playing = undefined;
        setText(byId('play'), 'play');
      }
    }, 200);
  });
  // The report's checks, for the run's end.
  if (record.status === 'completed' || record.status === 'failed')
    try {
      const report = await getJson<{ checks: VizCheck[] }>(`/api/runs/${run}/report`);
      const checks = report.checks.map((c) => ({
        id: c.id,
        name: c.name,
        value: c.value,
        unit: c.unit,
        op: c.op,
        threshold: c.threshold,
        pass: c.pass,
      }));
      const withChecks = (st: VizState): VizState => ({ ...st, run: { ...st.run, checks } });
      replayInitial = withChecks(replayInitial);
      checkpoints = checkpoints.map((c) => ({ index: c.index, state: withChecks(c.state) }));
      view.history = withChecks(view.history);
    } catch {
      // A run whose report cannot be built is still replayed; its checks are not shown.
    }
  showInstant();
}

async function startIndex(): Promise<void> {
  view.mode = 'index';
  setText(testid('mode'), 'runs');
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
        updatedAt: number;
        finishedAt: number | null;
        failure: string | null;
      }[]
    >('/api/runs');
  const table = testid('runs');
  table.replaceChildren(
    h(
      'tr',
      {},
      ...['run', 'status', 'scenario', 'started', 'duration', 'rounds', 'result', ''].map((c) =>
        h('th', {}, c),
      ),
    ),
  );
  for (const r of runs) {
    const end = r.finishedAt ?? r.updatedAt;
    const result =
      r.status === 'completed'
        ? `completed, ${r.totalRounds} rounds committed`
        : r.status === 'failed'
          ? `failed: ${r.failure ?? '?'}`
          : r.status === 'running'
            ? 'running'
            : `${r.status} after round ${r.currentRound}`;
    table.append(
      h(
        'tr',
        { 'data-testid': `run-${r.runId}`, 'data-status': r.status },
        h(
          'td',
          {},
          h('a', { href: `/?run=${encodeURIComponent(r.runId)}`, 'data-testid': 'run-open' }, r.runId),
        ),
        h('td', { 'data-testid': 'run-status-cell' }, r.status),
        h('td', {}, r.scenario),
        h('td', {}, clockText(r.createdAt)),
        h('td', {}, formatDuration(end - r.createdAt, 'spaced')),
        h('td', {}, `${r.currentRound} / ${r.totalRounds}`),
        h('td', { 'data-testid': 'run-result' }, result),
        h('td', {}, h('a', { href: `/?run=${encodeURIComponent(r.runId)}` }, 'replay')),
      ),
    );
  }
  if (runs.length === 0) table.append(h('tr', {}, h('td', {}, 'no runs in this store')));
}

function wire(): void {
  const canvas = byId('timeline-canvas') as HTMLCanvasElement;
  timeline = createTimeline(canvas, showPick, () => renderTimeline());
  byId('timeline-fit').addEventListener('click', () => timeline?.fit());
  const machine = testid('chart-machine') as HTMLSelectElement;
  machine.addEventListener('change', () => {
    view.machine = machine.value as View['machine'];
    chartKey = '';
    renderChart(view.state);
  });
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
  byId('events-filter').addEventListener('input', (e) => {
    view.filter = (e.target as HTMLInputElement).value;
    renderEvents();
  });
  byId('events').addEventListener('click', (e) => {
    const li = (e.target as Element).closest('li[data-i]');
    const ev = li ? shownEvents[Number(li.getAttribute('data-i'))] : undefined;
    if (ev) showEvent(ev);
  });
  // For tests and tools: where the timeline draws what.
  (window as unknown as { breakwaterViz: unknown }).breakwaterViz = {
    markerPoint: (agent: string, i: number) => timeline?.markerPoint(agent, i) ?? null,
    geometry: () => timeline?.geometry() ?? null,
    zoomTo: (from: number, to: number) => timeline?.zoomTo(from, to),
    /** Each lane's states and fault count, as the timeline draws them (whole history). */
    lanes: () =>
      Object.fromEntries(
        Object.values(view.history.agents).map((a) => [
          a.name,
          { states: a.segments.map((g) => g.state), markers: a.markers.length, calls: a.calls.length },
        ]),
      ),
  };
}

async function main(): Promise<void> {
  wire();
  wireTime();
  const config = await getJson<VizPageConfig>('/api/config');
  [view.chart, view.charts.breaker, view.charts.supervisor] = await Promise.all([
    getJson<VizChart>('/api/chart?machine=agent'),
    getJson<VizChart>('/api/chart?machine=breaker'),
    getJson<VizChart>('/api/chart?machine=supervisor'),
  ]);
  const asked = new URLSearchParams(location.search).get('run');
  if (asked && config.replay) return startReplay(asked);
  if (config.live) {
    startLive(null, config);
    return;
  }
  if (config.runId && config.replay) return startReplay(config.runId);
  if (config.replay) return startIndex();
  setText(testid('mode'), 'nothing to show');
}

main().catch((e: unknown) => {
  setText(testid('mode'), 'error');
  setText(testid('connection'), e instanceof Error ? e.message : String(e));
});
