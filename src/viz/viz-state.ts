import {
  agentState,
  breakerState,
  callAttempt,
  runStarted,
  sample,
  tokenGranted,
  tokenReleased,
  tokenWait,
  turnCompleted,
} from './viz-event-handlers.ts';
import { num, str, withLine } from './viz-state-access.ts';
import type {
  EmptyVizStateOptions,
  VizCheck,
  VizEvent,
  VizSampleEvent,
  VizState,
} from './viz-state-types.ts';

/*
 * The visualizer's one reducer. The server folds the live feed with it, and the page (bundled from
 * src/viz/page/) folds the same events with the same code, so "the state at instant t" is, live or in
 * replay, the fold of the events with `at <= t`. Pure: never mutates its input, reads no clock.
 * Bundled for the browser with its parts (viz-state-types.ts, viz-event-handlers.ts, viz-state-access.ts): they
 * import nothing but each other and types.
 */

/**
 * The state before any event.
 *
 * @example
 * ```ts
 * const state = emptyVizState({ limit: 3 });
 * ```
 */
export function emptyVizState(options: EmptyVizStateOptions = {}): VizState {
  return {
    now: null,
    applied: 0,
    run: {
      runId: null,
      scenario: null,
      status: 'unknown',
      rounds: null,
      round: 0,
      committedRound: 0,
      startedAt: null,
      finishedAt: null,
      checks: null,
    },
    agents: {},
    endpoints: {},
    tokens: { limit: options.limit ?? null, held: 0, holders: [], queue: {} },
    recent: [],
  };
}

/**
 * Folds one event into the state and returns the new state. Unknown event types only move `now`.
 *
 * @example
 * ```ts
 * let state = emptyVizState();
 * for (const e of events) state = applyEvent(state, e);
 * state.agents.analyst?.state; // 'cooling'
 * ```
 */
export function applyEvent(state: VizState, event: VizEvent): VizState {
  const at = Number(event.at);
  const base: VizState = {
    ...state,
    now: state.now === null ? at : Math.max(state.now, at),
    applied: state.applied + 1,
  };
  const data = (event.data ?? {}) as Record<string, unknown>;
  switch (event.type) {
    case 'run.started':
      return withLine(runStarted(base, at, data), at, event.type, `run ${str(data.runId) ?? ''} started`);
    case 'run.finished':
      return withLine(
        { ...base, run: { ...base.run, status: str(data.status) ?? 'finished', finishedAt: at } },
        at,
        event.type,
        `run finished: ${str(data.status) ?? ''}`,
      );
    case 'round.started':
      return withLine(
        { ...base, run: { ...base.run, round: num(data.round) ?? base.run.round } },
        at,
        event.type,
        `round ${num(data.round) ?? '?'} started`,
      );
    case 'round.committed':
      return withLine(
        { ...base, run: { ...base.run, committedRound: num(data.round) ?? base.run.committedRound } },
        at,
        event.type,
        `round ${num(data.round) ?? '?'} committed`,
      );
    case 'agent.state':
      return agentState(base, event.agent ?? '', str(data.state) ?? 'idle', at);
    case 'call.attempt':
      return callAttempt(base, event.agent ?? null, event.endpoint ?? null, data, at);
    case 'token.granted':
      return tokenGranted(base, event.agent ?? '', event.endpoint ?? '', data);
    case 'probe.started':
      return withLine(
        tokenGranted(base, `probe:${event.endpoint ?? ''}`, event.endpoint ?? '', {
          ...data,
          held: base.tokens.held + 1,
        }),
        at,
        event.type,
        `probe → ${event.endpoint ?? ''}`,
      );
    case 'token.released':
      return tokenReleased(base, event.agent ?? '', event.endpoint ?? '', str(data.leaseId), num(data.held));
    case 'token.reclaimed':
      return withLine(
        tokenReleased(base, str(data.holder) ?? '', event.endpoint ?? '', str(data.leaseId), undefined),
        at,
        event.type,
        `token reclaimed from ${str(data.holder) ?? '?'}`,
      );
    case 'token.wait':
      return tokenWait(base, event.agent ?? '', event.endpoint ?? '', data, at);
    case 'token.denied':
      return withLine(base, at, event.type, `${event.agent ?? ''}: ${str(data.reason) ?? 'denied'}`);
    case 'route.wait':
      return withLine(
        base,
        at,
        event.type,
        `${event.agent ?? ''} waits for ${event.endpoint ?? ''} (~${Math.round(num(data.expectedMs) ?? 0)} ms) rather than ${str(data.insteadOf) ?? '?'} (~${Math.round(num(data.insteadExpectedMs) ?? 0)} ms)`,
      );
    case 'breaker.state':
      return breakerState(base, event.endpoint ?? '', data, at);
    case 'turn.completed':
      return turnCompleted(base, event.agent ?? '', event.endpoint ?? null, data, at);
    case 'policy.log':
      return withLine(base, at, event.type, `${event.agent ?? ''}: ${str(data.message) ?? ''}`);
    case 'viz.sample':
      return sample(base, at, data as VizSampleEvent['data']);
    case 'viz.report': {
      const checks = Array.isArray(data.checks) ? (data.checks as VizCheck[]) : [];
      return { ...base, run: { ...base.run, status: str(data.status) ?? base.run.status, checks } };
    }
    default:
      return base;
  }
}

/**
 * Folds events in order.
 *
 * @example
 * ```ts
 * const state = foldEvents(events, emptyVizState({ limit: 3 }));
 * ```
 */
export function foldEvents(events: Iterable<VizEvent>, initial: VizState = emptyVizState()): VizState {
  let state = initial;
  for (const e of events) state = applyEvent(state, e);
  return state;
}

/**
 * The state at instant `t`: the fold, in log order, of the events with `at <= t`.
 *
 * @example
 * ```ts
 * const atNine = stateAt(events, Date.parse('2026-08-17T09:00:00+09:00'));
 * ```
 */
export function stateAt(
  events: readonly VizEvent[],
  t: number,
  initial: VizState = emptyVizState(),
): VizState {
  let state = initial;
  for (const e of events) if (Number(e.at) <= t) state = applyEvent(state, e);
  return state;
}
