import type { AnyStateMachine } from 'xstate';
import { toDirectedGraph } from 'xstate/graph';
import { agentMachine } from '../../machines/agent.machine.ts';
import { breakerMachine } from '../../machines/breaker.machine.ts';
import { supervisorMachine } from '../../machines/supervisor.machine.ts';
import type { VizChart, VizChartNode } from './viz-chart.ts';

export type { VizChart, VizChartEdge, VizChartNode } from './viz-chart.ts';

interface GraphNode {
  readonly id: string;
  readonly stateNode: {
    readonly key: string;
    readonly type: string;
    readonly initial?: { readonly target?: readonly { readonly id: string }[] };
    readonly invoke?: readonly { readonly src: unknown }[];
    readonly entry?: readonly unknown[];
  };
  readonly children: readonly GraphNode[];
  readonly edges: readonly {
    readonly source: { readonly id: string };
    readonly target: { readonly id: string };
    readonly label: { readonly text: string };
    readonly transition: { readonly guard?: unknown };
  }[];
}

/**
 * Serializes a machine's statechart from its real definition (`toDirectedGraph` of `xstate/graph`):
 * states, their nesting and initial children, invoked actors, and transitions with readable events.
 * Transitions without a target (e.g. `MEMORY.SET` on the root) are left out.
 *
 * @example
 * ```ts
 * const chart = statechartOf(agentMachine);
 * chart.edges.find((e) => e.source === 'idle')?.target; // 'queued'
 * ```
 */
export function statechartOf(machine: AnyStateMachine): VizChart {
  const graph = toDirectedGraph(machine) as unknown as GraphNode;
  const rootId = graph.id;
  const pathOf = (id: string) => (id === rootId ? '' : id.slice(rootId.length + 1));
  const invokesById = new Map<string, readonly string[]>();
  const edges = new Map<string, { source: string; target: string; event: string; guards: string[] }>();

  const node = (n: GraphNode): VizChartNode => {
    const invokes = (n.stateNode.invoke ?? []).map((i) => (typeof i.src === 'string' ? i.src : 'actor'));
    invokesById.set(n.id, invokes);
    // Named entry actions (the engine call's `startCall`); XState's own built-ins (`xstate.assign`, …) are not shown.
    const entry = (n.stateNode.entry ?? [])
      .map((a) => (typeof a === 'string' ? a : (a as { type?: unknown } | null)?.type))
      .filter((t): t is string => typeof t === 'string' && !t.startsWith('xstate.'));
    const initial = n.stateNode.initial?.target?.[0]?.id;
    return {
      id: n.id,
      path: pathOf(n.id),
      key: n.stateNode.key,
      type: n.stateNode.type,
      initial: initial ? pathOf(initial) : null,
      invokes,
      entry,
      children: n.children.map(node),
    };
  };
  const root = node(graph);

  const collect = (n: GraphNode) => {
    for (const e of n.edges) {
      const source = pathOf(e.source.id);
      const target = pathOf(e.target.id);
      if (source === '' || target === '' || e.source.id === e.target.id) continue;
      const event = readableEvent(e.label.text, invokesById.get(e.source.id) ?? []);
      const key = `${source}\u0000${target}\u0000${event}`;
      const guard = guardName(e.transition.guard);
      const known = edges.get(key);
      if (known) {
        if (guard && !known.guards.includes(guard)) known.guards.push(guard);
      } else edges.set(key, { source, target, event, guards: guard ? [guard] : [] });
    }
    n.children.forEach(collect);
  };
  collect(graph);
  return { machine: rootId, root, edges: [...edges.values()] };
}

function guardName(guard: unknown): string | undefined {
  if (typeof guard === 'string') return guard;
  if (guard && typeof guard === 'object' && typeof (guard as { type?: unknown }).type === 'string')
    return (guard as { type: string }).type;
  return undefined;
}

/** `xstate.done.actor.0.agent.tools` → `done(runTools)`; `xstate.after.coolingDelay.…` → `after coolingDelay`. */
function readableEvent(text: string, invokes: readonly string[]): string {
  const done = /^xstate\.(done|error)\.actor\.(\d+)\./.exec(text);
  if (done) return `${done[1]}(${invokes[Number(done[2])] ?? 'actor'})`;
  const after = /^xstate\.after\.([^.]+)\./.exec(text);
  if (after) return `after ${after[1]}`;
  return text;
}

let agentChart: VizChart | undefined;

/**
 * The agent statechart (`agentMachine`), serialized once.
 *
 * @example
 * ```ts
 * agentStatechart().root.children.map((c) => c.key); // ['idle', 'queued', 'calling', …]
 * ```
 */
export function agentStatechart(): VizChart {
  agentChart ??= statechartOf(agentMachine);
  return agentChart;
}

/** The machines the page can draw. */
export type VizMachineName = 'agent' | 'breaker' | 'supervisor';

const charts = new Map<VizMachineName, VizChart>();

/**
 * The statechart of one of the runtime's machines (agent, endpoint breaker, supervisor), serialized once.
 *
 * @example
 * ```ts
 * machineStatechart('breaker').root.children.map((c) => c.key); // ['closed', 'open', 'halfOpen']
 * ```
 */
export function machineStatechart(name: VizMachineName): VizChart {
  if (name === 'agent') return agentStatechart();
  let chart = charts.get(name);
  if (!chart) {
    chart = statechartOf(name === 'breaker' ? breakerMachine : supervisorMachine);
    charts.set(name, chart);
  }
  return chart;
}
