import type { AgentInfo, RuntimeEvent } from '../core/runtime-event.ts';
import type { Interval } from './call-intervals.ts';
import { num, record, str } from './report-fields.ts';
import type { ReportWindow } from './report-types.ts';

/**
 * The line seed 000's worker logged when its model chain was empty; policies write it as `policy.log`.
 *
 * @example
 * ```ts
 * emit({ type: 'policy.log', at, agent, data: { message: COOLING_DOWN_MESSAGE } });
 * ```
 */
export const COOLING_DOWN_MESSAGE = 'all candidate models are cooling down';

/** One turn as the report reads it from its `turn.completed`. */
export interface TurnSample {
  readonly tier: string;
  readonly outcome: string;
  readonly waitMs: number;
  readonly startedAt: number;
}

/** One upstream call as the report reads it from its `call.attempt`. */
export interface CallSample extends Interval {
  readonly model: string;
  readonly provider: string;
  readonly endpoint: string;
  readonly ok: boolean;
  readonly status?: number;
  readonly faultKind?: string;
  /** A breaker's HALF-OPEN probe: an upstream call no agent asked for. */
  readonly probe: boolean;
}

/** What {@link collectSamples} reads from a run's events. */
export interface RunSamples {
  readonly turns: TurnSample[];
  readonly calls: CallSample[];
  /** When each "all candidate models are cooling down" line was logged. */
  readonly coolingDown: number[];
  readonly agents: AgentInfo[];
  readonly window: Omit<ReportWindow, 'peak'>;
}

/** Reads the events into turn and call samples; later `turn.completed` events of the same turn id win. */
export function collectSamples(events: readonly RuntimeEvent[]): RunSamples {
  const turns = new Map<string, TurnSample>();
  const calls: CallSample[] = [];
  const coolingDown: number[] = [];
  const agents = new Map<string, AgentInfo>();
  let started: number | undefined;
  let finished: number | undefined;
  let first: number | undefined;
  let last: number | undefined;
  events.forEach((e, index) => {
    const at = num(e.at);
    if (at === undefined) return;
    first = first === undefined ? at : Math.min(first, at);
    last = last === undefined ? at : Math.max(last, at);
    const data = record(e.data);
    switch (e.type) {
      case 'run.started':
        started ??= at;
        for (const a of Array.isArray(data.agents) ? data.agents : []) {
          const info = record(a);
          const name = str(info.name);
          if (name) agents.set(name, info as unknown as AgentInfo);
        }
        break;
      case 'run.finished':
        finished = at;
        break;
      case 'turn.completed': {
        const id = str(data.turnId) ?? `${e.agent ?? '?'}#${index}`;
        turns.set(id, {
          tier: str(data.tier) ?? 'unknown',
          outcome: str(data.outcome) ?? 'unknown',
          waitMs: num(data.waitMs) ?? 0,
          startedAt: num(data.startedAt) ?? at,
        });
        break;
      }
      case 'call.attempt': {
        if (data.memoized === true) break;
        calls.push(callSample(e, data, at));
        break;
      }
      case 'policy.log':
        if (str(data.message)?.toLowerCase().includes(COOLING_DOWN_MESSAGE)) coolingDown.push(at);
        break;
    }
  });
  const window: Omit<ReportWindow, 'peak'> = {
    from: started ?? first ?? null,
    to: finished ?? last ?? null,
    durationMs: (finished ?? last ?? 0) - (started ?? first ?? 0),
  };
  return { turns: [...turns.values()], calls, coolingDown, agents: [...agents.values()], window };
}

/** A `call.attempt` as a call in flight from its start to its end. */
function callSample(e: RuntimeEvent, data: Record<string, unknown>, at: number): CallSample {
  const latency = num(data.latencyMs);
  const start = num(data.startedAt) ?? (latency !== undefined ? at - latency : at);
  // The log stores `at` rounded to the ms while `startedAt` and `latencyMs` keep their fractions:
  // the call's own numbers give its end exactly (rounding must not shorten a call to nothing).
  const end = num(data.startedAt) !== undefined && latency !== undefined ? start + latency : at;
  const status = num(data.status);
  const faultKind = str(data.faultKind);
  return {
    start,
    end,
    model: str(data.model) ?? 'unknown',
    provider: str(data.provider) ?? 'unknown',
    endpoint: e.endpoint ?? 'unknown',
    ok: data.outcome === 'ok',
    ...(status !== undefined ? { status } : {}),
    ...(faultKind !== undefined ? { faultKind } : {}),
    probe: data.probe === true,
  };
}
