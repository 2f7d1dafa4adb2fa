import { loadRunReport } from '../report/load-run-report.ts';
import type { RunStore } from '../store/run-store.ts';
import type { VizLiveSource } from './live-source.ts';
import { machineStatechart } from './statechart-graph.ts';
import { HttpError, intParam } from './viz-http.ts';
import { turnFromRecord } from './viz-turn.ts';

/** What `/api/config` tells the page. */
export interface VizPageConfig {
  readonly live: boolean;
  readonly liveRunId: string | null;
  readonly replay: boolean;
  readonly runId: string | null;
}

/** What the JSON APIs answer from: the page's config, the live source and the store (each may be absent). */
export interface VizApiSources {
  readonly config: VizPageConfig;
  readonly live: VizLiveSource | undefined;
  readonly store: RunStore | undefined;
}

const requireStore = (store: RunStore | undefined): RunStore => {
  if (!store) throw new HttpError(404, 'this visualizer has no store: replay is not available');
  return store;
};
const requireLive = (live: VizLiveSource | undefined): VizLiveSource => {
  if (!live) throw new HttpError(404, 'this visualizer has no live runtime');
  return live;
};

/** The live source to stream on `/api/live`; 404 when the visualizer has none. */
export function liveSourceOf(sources: VizApiSources): VizLiveSource {
  return requireLive(sources.live);
}

/**
 * The answer of `/api/<parts>`: the page's config, a statechart, the live state and agents, and the replay
 * APIs over the store (`/api/runs…`).
 */
export async function answerApi(
  sources: VizApiSources,
  url: URL,
  parts: readonly string[],
  signal: AbortSignal,
): Promise<unknown> {
  const [first, id, sub, more] = parts;
  if (first === 'config' && parts.length === 1) return sources.config;
  if (first === 'chart' && parts.length === 1) {
    const machine = url.searchParams.get('machine') ?? 'agent';
    if (machine !== 'agent' && machine !== 'breaker' && machine !== 'supervisor')
      throw new HttpError(404, `no statechart "${machine}" (agent, breaker, supervisor)`);
    return machineStatechart(machine);
  }
  if (first === 'live' && id === 'state' && parts.length === 2) return requireLive(sources.live).snapshot();
  if (first === 'live' && id === 'agents' && sub !== undefined && more === undefined) {
    const source = requireLive(sources.live);
    const detail = source.agentDetail ? await source.agentDetail(sub, signal) : undefined;
    if (!detail) throw new HttpError(404, `no live agent "${sub}"`);
    return detail;
  }
  if (first !== 'runs' || more !== undefined) throw new HttpError(404, `no API at ${url.pathname}`);
  return answerRunsApi(requireStore(sources.store), url, id, sub, signal);
}

/** `/api/runs`, `/api/runs/:id` and `/api/runs/:id/<sub>`: the replay APIs over the store. */
async function answerRunsApi(
  s: RunStore,
  url: URL,
  id: string | undefined,
  sub: string | undefined,
  signal: AbortSignal,
): Promise<unknown> {
  if (id === undefined) {
    const limit = intParam(url, 'limit');
    return s.listRuns({ signal, ...(limit !== undefined ? { limit } : {}) });
  }
  const run = await s.getRun(id, { signal });
  if (!run) throw new HttpError(404, `no run "${id}"`);
  if (sub === undefined) return run;
  if (sub === 'report') return loadRunReport(s, id, { signal });
  if (sub === 'events') {
    const afterSeq = intParam(url, 'afterSeq');
    const untilAt = intParam(url, 'untilAt');
    const limit = intParam(url, 'limit');
    return s.readEvents(id, {
      signal,
      ...(afterSeq !== undefined ? { afterSeq } : {}),
      ...(untilAt !== undefined ? { untilAt } : {}),
      ...(limit !== undefined ? { limit } : {}),
    });
  }
  if (sub === 'turns') {
    const agent = url.searchParams.get('agent');
    const turns = await s.listTurns(id, { signal });
    return turns.filter((t) => !agent || t.agent === agent).map(turnFromRecord);
  }
  if (sub === 'snapshots') {
    const agent = url.searchParams.get('agent');
    const all = await s.loadAgentStates(id, { signal, machineVersion: run.machineVersion });
    if (!agent) return all;
    // Own entries only: `?agent=__proto__` is an agent that does not exist, not Object.prototype.
    return Object.hasOwn(all, agent) ? all[agent] : null;
  }
  throw new HttpError(404, `no API at ${url.pathname}`);
}
