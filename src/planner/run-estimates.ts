import { eventsFromRecords } from '../core/stored-event.ts';
import type { RunStore } from '../store/run-store.ts';
import { RunNotFoundError } from '../store/store-errors.ts';
import { pacingTokens } from '../core/token-usage.ts';

/**
 * `breakwater plan --from-run ID`: what a stored run says about each agent's cost — how many upstream
 * calls a turn of it took and how many tokens a call used — instead of the scenario's declared sizes.
 */

/** One agent's measured cost. */
export interface AgentEstimate {
  /** Upstream calls per LLM turn (its retries and fallbacks included: they are calls the quota sees). */
  readonly callsPerTurn: number;
  /** Tokens (input + output, as the provider reported them) per answered turn. */
  readonly tokensPerCall: number;
  /** The LLM turns measured. */
  readonly turns: number;
}

/**
 * A stored run's measured costs, per agent, and the mean upstream call length.
 *
 * @example
 * ```ts
 * const est = await estimatesFromRun(store, 'morning-peak-20260817-…');
 * est.agents.cowork?.callsPerTurn; // 1.2
 * ```
 */
export interface RunEstimates {
  readonly runId: string;
  readonly agents: Readonly<Record<string, AgentEstimate>>;
  /** Mean upstream call length in the run, seconds; `null` without calls. */
  readonly callSeconds: number | null;
}

const LLM_OUTCOMES = new Set(['answered', 'fallback', 'degraded', 'failed']);

/**
 * Reads a stored run's turns and `call.attempt` events into per-agent estimates. Probes are not counted
 * (no agent asked for them); turns that ran as plain code or were cancelled are not LLM turns.
 *
 * @throws {RunNotFoundError} when the store has no such run
 * @example
 * ```ts
 * const plan = planSchedule(scenarioPlanInput(spec, { estimates: await estimatesFromRun(store, runId) }));
 * ```
 */
export async function estimatesFromRun(store: RunStore, runId: string): Promise<RunEstimates> {
  const run = await store.getRun(runId);
  if (!run) throw new RunNotFoundError(runId);
  const [turns, records] = await Promise.all([store.listTurns(runId), store.readEvents(runId)]);
  const acc = new Map<string, { turns: number; calls: number; tokens: number; measured: number }>();
  const of = (agent: string) => {
    let a = acc.get(agent);
    if (!a) {
      a = { turns: 0, calls: 0, tokens: 0, measured: 0 };
      acc.set(agent, a);
    }
    return a;
  };
  for (const t of turns) {
    if (!LLM_OUTCOMES.has(t.outcome)) continue;
    const a = of(t.agent);
    a.turns++;
    if (t.usage && !t.degraded) {
      // A plan is an estimate: a turn whose provider reported no usage counts breakwater's estimate of it.
      a.tokens += pacingTokens(t.usage);
      a.measured++;
    }
  }
  let latency = 0;
  let calls = 0;
  for (const e of eventsFromRecords(records)) {
    if (e.type !== 'call.attempt' || !e.agent) continue;
    const data = e.data as { probe?: unknown; latencyMs?: unknown; memoized?: unknown };
    if (data.probe === true || data.memoized === true) continue;
    of(e.agent).calls++;
    if (typeof data.latencyMs === 'number' && Number.isFinite(data.latencyMs)) {
      latency += data.latencyMs;
      calls++;
    }
  }
  const agents: Record<string, AgentEstimate> = {};
  for (const [name, a] of [...acc].sort(([x], [y]) => x.localeCompare(y))) {
    if (a.turns === 0 || a.measured === 0) continue;
    agents[name] = {
      callsPerTurn: Math.max(1, a.calls / a.turns),
      tokensPerCall: Math.max(1, Math.round(a.tokens / a.measured)),
      turns: a.turns,
    };
  }
  return { runId, agents, callSeconds: calls > 0 ? latency / calls / 1000 : null };
}
