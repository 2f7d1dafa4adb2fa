import type { VizChart } from '../../statechart-graph.ts';
import type { VizState } from '../../viz-state-types.ts';
import { byId, s, setText, testid } from '../page-dom.ts';
import { own } from '../page-json.ts';
import { agentNames, type View, view } from '../page-view.ts';
import { layoutChart } from '../statechart-layout.ts';

/*
 * The statechart panel: the agent's, the breaker's or the supervisor's machine, drawn from the real machine
 * with the current state lit (redrawn only when the lit state changes).
 */

let chartKey = '';

/** Draws the chart again on the next render. */
export function forgetChart(): void {
  chartKey = '';
}

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

export function renderChart(state: VizState): void {
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

/** The machine select: the chart panel draws the chosen machine at once. */
export function listenForMachineChoice(): void {
  const machine = testid('chart-machine') as HTMLSelectElement;
  machine.addEventListener('change', () => {
    view.machine = machine.value as View['machine'];
    chartKey = '';
    renderChart(view.state);
  });
}
