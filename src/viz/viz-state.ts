import type { AgentInfo, RuntimeEvent } from '../core/runtime-event.ts';
import type { StoredEventRow } from '../core/stored-event.ts';

/*
 * The visualizer's one reducer. The server folds the live feed with it, and the page (bundled from
 * src/viz/page/) folds the same events with the same code, so "the state at instant t" is, live or in
 * replay, the fold of the events with `at <= t`. Pure: never mutates its input, reads no clock.
 * This file is bundled for the browser: it may import types only.
 */

/**
 * Lines kept in {@link VizState.recent}.
 *
 * @example
 * ```ts
 * state.recent.length <= MAX_RECENT; // true
 * ```
 */
export const MAX_RECENT = 40;

/** One stretch of time an agent spent in one state. `to` is `null` while it is still in it. */
export interface VizSegment {
  readonly state: string;
  readonly from: number;
  readonly to: number | null;
}

/** A failed upstream attempt on an agent's timeline (a 429, an overload, a dropped connection…). */
export interface VizMarker {
  readonly at: number;
  /** The fault kind (`rate_limited`, `overloaded`, `network`, …). */
  readonly kind: string;
  readonly endpoint: string | null;
  readonly status: number | null;
  /** True for a 429 / `rate_limited`. */
  readonly rateLimited: boolean;
  /** The Retry-After the provider gave, ms; `null` when it gave none. */
  readonly retryAfterMs: number | null;
}

/**
 * One upstream attempt of an agent, as a span of its lane: from `from` (the attempt's start) to `to`
 * (its answer or fault), with what the call log says about it.
 */
export interface VizCall {
  readonly from: number;
  readonly to: number;
  readonly endpoint: string | null;
  /** `ok` or `fault`. */
  readonly outcome: string;
  /** The fault kind, or `ok`. */
  readonly kind: string;
  readonly status: number | null;
  readonly latencyMs: number | null;
  /** How long the agent waited for its token before this attempt (the latest grant's `waitedMs`). */
  readonly waitMs: number | null;
  /** 1 for the first attempt of a turn, 2 for the next… */
  readonly attempt: number;
  readonly retryAfterMs: number | null;
}

/** Why an agent is where it is: its latest failed upstream attempt, or the reason of a degraded turn. */
export interface VizReason {
  readonly at: number;
  readonly kind: string;
  readonly endpoint: string | null;
  readonly status: number | null;
  readonly retryAfterMs: number | null;
}

/** One agent as the visualizer shows it. */
export interface VizAgent {
  readonly name: string;
  readonly tier: string | null;
  readonly chain: string | null;
  readonly noAgent: boolean;
  /** Top-level state: idle, queued, calling, fallback, tools, cooling, degraded, stopped. */
  readonly state: string;
  /** Full state path when known (live: `degraded.resting`); `null` from the event log alone. */
  readonly path: string | null;
  /** When it entered `state`; `null` when not known. */
  readonly since: number | null;
  /** The endpoint of its latest grant, attempt or answer. */
  readonly lastEndpoint: string | null;
  /** When a `cooling` agent may try again (from the supervisor's wait). */
  readonly coolingUntil: number | null;
  /** Every state it went through, oldest first: the whole run, never cut (the page aggregates when zoomed out). */
  readonly segments: readonly VizSegment[];
  /** Every failed upstream attempt, oldest first. */
  readonly markers: readonly VizMarker[];
  /** Every upstream attempt, oldest first. */
  readonly calls: readonly VizCall[];
  /** The latest fault it met (or why its turn degraded); `null` when none yet. */
  readonly reason: VizReason | null;
  /** Attempts made in the turn it is on now. */
  readonly attempts: number;
  /** `waitedMs` of its latest token grant. */
  readonly lastWaitMs: number | null;
  readonly turns: number;
  readonly degradedTurns: number;
  readonly lastOutcome: string | null;
}

/** A rate bucket's level (RPM or TPM), when the runtime knows it. */
export interface VizBucket {
  readonly capacity: number | null;
  readonly available: number | null;
}

/** One engine endpoint (provider + key + model). */
export interface VizEndpoint {
  readonly id: string;
  readonly provider: string | null;
  readonly model: string | null;
  readonly keyFingerprint: string | null;
  readonly breaker: 'closed' | 'open' | 'halfOpen';
  readonly openUntil: number | null;
  readonly cooldownUntil: number;
  readonly disabledUntil: number;
  readonly disabledReason: string | null;
  readonly inFlight: number;
  readonly rpm: VizBucket | null;
  readonly tpm: VizBucket | null;
  readonly calls: number;
  readonly faults: number;
  readonly lastFault: { readonly at: number; readonly kind: string; readonly status: number | null } | null;
}

/** One token holder: an agent, or `probe:<endpoint>` for a HALF-OPEN probe. */
export interface VizHolder {
  /** `null` when the holder came from a live sample (which carries no lease ids). */
  readonly leaseId: string | null;
  readonly holder: string;
  readonly endpoint: string;
}

/** The supervisor's global concurrency tokens. */
export interface VizTokens {
  /** `null` until a live sample or the run's config tells it. */
  readonly limit: number | null;
  readonly held: number;
  readonly holders: readonly VizHolder[];
  /** Agents waiting for a token, by tier, in order. */
  readonly queue: Readonly<Record<string, readonly string[]>>;
}

/** The run the events belong to, when the log says. */
export interface VizRun {
  readonly runId: string | null;
  readonly scenario: string | null;
  readonly status: string;
  readonly rounds: number | null;
  /** The round running now (`round.started`), 0 before the first. */
  readonly round: number;
  /** The last committed round, 0 before the first. */
  readonly committedRound: number;
  /** When the run started and finished (run clock); `null` while not known. */
  readonly startedAt: number | null;
  readonly finishedAt: number | null;
  /** The report's checks, once the run's report is known (live: pushed at the end; replay: loaded). */
  readonly checks: readonly VizCheck[] | null;
}

/** One check of the run's report, as the page shows it. */
export interface VizCheck {
  readonly id: string;
  readonly name: string;
  readonly value: number | null;
  readonly unit: string;
  readonly op: string | null;
  readonly threshold: number | null;
  /** `true` PASS, `false` FAIL, `null` reported only. */
  readonly pass: boolean | null;
}

/**
 * The run's report, pushed to the live page once the run ended (never stored: the report is computed
 * from the event log).
 */
export interface VizReportEvent {
  readonly type: 'viz.report';
  readonly at: number;
  readonly agent?: undefined;
  readonly endpoint?: undefined;
  readonly data: { readonly status: string; readonly checks: readonly VizCheck[] };
}

/** A one-line summary of a recent event. */
export interface VizLine {
  readonly at: number;
  readonly type: string;
  readonly text: string;
}

/** Everything the page draws, as plain JSON. */
export interface VizState {
  /** Time of the latest event or sample folded in; `null` for the empty state. */
  readonly now: number | null;
  /** Number of events folded in. */
  readonly applied: number;
  readonly run: VizRun;
  readonly agents: Readonly<Record<string, VizAgent>>;
  readonly endpoints: Readonly<Record<string, VizEndpoint>>;
  readonly tokens: VizTokens;
  /** Newest last. */
  readonly recent: readonly VizLine[];
}

/** An endpoint's health as a live sample carries it (the shape of the runtime's `EndpointHealth`). */
export interface VizHealthSample {
  readonly id: string;
  readonly descriptor?: {
    readonly provider?: string;
    readonly model?: string;
    readonly keyFingerprint?: string;
  };
  readonly breaker: 'closed' | 'open' | 'halfOpen';
  readonly openUntil: number | null;
  readonly cooldownUntil: number;
  readonly disabledUntil: number;
  readonly disabledReason?: string;
  readonly inFlight: number;
  readonly rpm?: { readonly capacity?: number; readonly available?: number };
  readonly tpm?: { readonly capacity?: number; readonly available?: number };
}

/** An agent as a live sample carries it. */
export interface VizAgentSample {
  readonly name: string;
  readonly tier: string;
  readonly chain?: string;
  readonly noAgent?: boolean;
  readonly state: string;
  /** Full state path (`degraded.resting`). */
  readonly path?: string;
}

/**
 * What the live feed adds to the event log: the runtime's health, tokens and agents read at one instant
 * (bucket levels and exact queues are not in the events). Never stored; replay works without it.
 */
export interface VizSampleEvent {
  readonly type: 'viz.sample';
  readonly at: number;
  readonly agent?: undefined;
  readonly endpoint?: undefined;
  readonly data: {
    readonly endpoints?: readonly VizHealthSample[];
    readonly tokens?: {
      readonly limit: number;
      readonly held: number;
      readonly holders: readonly { readonly holder: string; readonly endpointId: string }[];
      readonly queue: readonly { readonly agent: string; readonly tier: string }[];
    };
    readonly agents?: readonly VizAgentSample[];
  };
}

/** What the reducer folds: a runtime event, or a live sample. */
export type VizEvent = RuntimeEvent | VizSampleEvent | VizReportEvent;

/** A stored event row, as the page reads it from the server: the event log's row (src/core/stored-event.ts). */
export type VizEventRecord = StoredEventRow;

/** Options of {@link emptyVizState}. */
export interface EmptyVizStateOptions {
  /** The token limit, when known up front (a run's config). Default `null`. */
  readonly limit?: number | null;
}

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

// ---------------------------------------------------------------------------------------------------

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

function capped<T>(items: readonly T[], max: number): readonly T[] {
  return items.length > max ? items.slice(items.length - max) : items;
}

function withLine(state: VizState, at: number, type: string, text: string): VizState {
  return { ...state, recent: capped([...state.recent, { at, type, text }], MAX_RECENT) };
}

function newAgent(name: string, info: Partial<AgentInfo> = {}): VizAgent {
  return {
    name,
    tier: info.tier ?? null,
    chain: info.chain ?? null,
    noAgent: info.noAgent ?? false,
    state: 'idle',
    path: null,
    since: null,
    lastEndpoint: null,
    coolingUntil: null,
    segments: [],
    markers: [],
    calls: [],
    reason: null,
    attempts: 0,
    lastWaitMs: null,
    turns: 0,
    degradedTurns: 0,
    lastOutcome: null,
  };
}

function newEndpoint(id: string): VizEndpoint {
  return {
    id,
    provider: null,
    model: null,
    keyFingerprint: null,
    breaker: 'closed',
    openUntil: null,
    cooldownUntil: 0,
    disabledUntil: 0,
    disabledReason: null,
    inFlight: 0,
    rpm: null,
    tpm: null,
    calls: 0,
    faults: 0,
    lastFault: null,
  };
}

/**
 * A record's OWN entry at `key`, or undefined. Names come from scenarios and events: an agent or tier
 * called `__proto__` or `constructor` must find nothing, not Object.prototype.
 */
function own<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

function agentOf(state: VizState, name: string): VizAgent {
  return own(state.agents, name) ?? newAgent(name);
}

function endpointOf(state: VizState, id: string): VizEndpoint {
  return own(state.endpoints, id) ?? newEndpoint(id);
}

function putAgent(state: VizState, agent: VizAgent): VizState {
  return { ...state, agents: { ...state.agents, [agent.name]: agent } };
}

function putEndpoint(state: VizState, endpoint: VizEndpoint): VizState {
  return { ...state, endpoints: { ...state.endpoints, [endpoint.id]: endpoint } };
}

function runStarted(state: VizState, at: number, data: Record<string, unknown>): VizState {
  let next: VizState = {
    ...state,
    run: {
      ...state.run,
      runId: str(data.runId) ?? state.run.runId,
      scenario: str(data.scenario) ?? state.run.scenario,
      status: 'running',
      rounds: num(data.rounds) ?? state.run.rounds,
      startedAt: state.run.startedAt ?? at,
      ...(num(data.resumedFrom) !== undefined ? { committedRound: num(data.resumedFrom)! } : {}),
    },
  };
  const agents = Array.isArray(data.agents) ? (data.agents as Partial<AgentInfo>[]) : [];
  for (const info of agents) {
    if (!info || typeof info.name !== 'string') continue;
    const known = own(next.agents, info.name);
    const agent: VizAgent = known
      ? {
          ...known,
          tier: info.tier ?? known.tier,
          chain: info.chain ?? known.chain,
          noAgent: info.noAgent ?? known.noAgent,
        }
      : {
          ...newAgent(info.name, info),
          since: at,
          segments: [{ state: 'idle', from: at, to: null }],
        };
    next = putAgent(next, agent);
  }
  const endpoints = Array.isArray(data.endpoints) ? data.endpoints : [];
  for (const id of endpoints) if (typeof id === 'string') next = putEndpoint(next, endpointOf(next, id));
  return next;
}

/** Moves an agent to `to` at `at`: closes its open segment, opens a new one, keeps the queue in step. */
function moveAgent(state: VizState, agent: VizAgent, to: string, at: number, path: string | null): VizState {
  if (agent.state === to && agent.segments.length > 0) return putAgent(state, { ...agent, path });
  const segments = agent.segments.map((s, i) =>
    i === agent.segments.length - 1 && s.to === null ? { ...s, to: at } : s,
  );
  const moved: VizAgent = {
    ...agent,
    state: to,
    path,
    since: at,
    // The supervisor's wait is reported before the agent's own move through `queued` into `cooling`.
    coolingUntil: to === 'cooling' || to === 'queued' ? agent.coolingUntil : null,
    segments: [...segments, { state: to, from: at, to: null }],
  };
  return withQueue(putAgent(state, moved), moved, agent.state);
}

/** Agents in `queued` wait for a token: keep the by-tier queue in step with their state. */
function withQueue(state: VizState, agent: VizAgent, previous: string): VizState {
  if (previous !== 'queued' && agent.state !== 'queued') return state;
  const tier = agent.tier ?? 'default';
  // No prototype: a tier named `__proto__` is an entry like any other.
  const queue: Record<string, readonly string[]> = Object.create(null);
  for (const [t, names] of Object.entries(state.tokens.queue)) {
    const kept = names.filter((n) => n !== agent.name);
    if (kept.length > 0) queue[t] = kept;
  }
  if (agent.state === 'queued') queue[tier] = [...(own(queue, tier) ?? []), agent.name];
  return { ...state, tokens: { ...state.tokens, queue } };
}

function agentState(state: VizState, name: string, to: string, at: number): VizState {
  if (!name) return state;
  const agent = agentOf(state, name);
  return withLine(moveAgent(state, agent, to, at, null), at, 'agent.state', `${name} → ${to}`);
}

function callAttempt(
  state: VizState,
  agentName: string | null,
  endpointId: string | null,
  data: Record<string, unknown>,
  at: number,
): VizState {
  const fault = data.outcome === 'fault';
  const kind = str(data.faultKind) ?? (fault ? 'fault' : 'ok');
  const status = num(data.status) ?? null;
  let next = state;
  if (endpointId) {
    const ep = endpointOf(next, endpointId);
    const retryAfter = num(data.retryAfterMs);
    next = putEndpoint(next, {
      ...ep,
      provider: str(data.provider) ?? ep.provider,
      model: str(data.model) ?? ep.model,
      calls: ep.calls + 1,
      faults: ep.faults + (fault ? 1 : 0),
      lastFault: fault ? { at, kind, status } : ep.lastFault,
      cooldownUntil:
        fault && retryAfter !== undefined ? Math.max(ep.cooldownUntil, at + retryAfter) : ep.cooldownUntil,
    });
  }
  if (agentName) {
    const agent = agentOf(next, agentName);
    const retryAfterMs = num(data.retryAfterMs) ?? null;
    const latencyMs = num(data.latencyMs) ?? null;
    const startedAt = num(data.startedAt) ?? (latencyMs !== null ? at - latencyMs : at);
    const attempt = agent.attempts + 1;
    const call: VizCall = {
      from: Math.min(startedAt, at),
      to: at,
      endpoint: endpointId,
      outcome: fault ? 'fault' : 'ok',
      kind,
      status,
      latencyMs,
      waitMs: agent.lastWaitMs,
      attempt,
      retryAfterMs,
    };
    next = putAgent(next, {
      ...agent,
      tier: agent.tier ?? str(data.tier) ?? null,
      lastEndpoint: endpointId ?? agent.lastEndpoint,
      calls: [...agent.calls, call],
      attempts: attempt,
      reason: fault ? { at, kind, endpoint: endpointId, status, retryAfterMs } : agent.reason,
      markers: fault
        ? [
            ...agent.markers,
            {
              at,
              kind,
              endpoint: endpointId,
              status,
              rateLimited: status === 429 || kind === 'rate_limited',
              retryAfterMs,
            },
          ]
        : agent.markers,
    });
  }
  if (!fault) return next;
  const label = status !== null ? `${status} ${kind}` : kind;
  return withLine(next, at, 'call.attempt', `${agentName ?? '?'} × ${endpointId ?? '?'}: ${label}`);
}

function tokenGranted(
  state: VizState,
  holder: string,
  endpointId: string,
  data: Record<string, unknown>,
): VizState {
  const leaseId = str(data.leaseId) ?? null;
  const holders = [...state.tokens.holders, { leaseId, holder, endpoint: endpointId }];
  let next: VizState = {
    ...state,
    tokens: { ...state.tokens, held: num(data.held) ?? holders.length, holders },
  };
  if (endpointId) {
    const ep = endpointOf(next, endpointId);
    next = putEndpoint(next, { ...ep, inFlight: ep.inFlight + 1 });
  }
  const agent = own(state.agents, holder);
  if (agent)
    next = putAgent(next, {
      ...agent,
      lastEndpoint: endpointId || agent.lastEndpoint,
      lastWaitMs: num(data.waitedMs) ?? agent.lastWaitMs,
    });
  return next;
}

function tokenReleased(
  state: VizState,
  holder: string,
  endpointId: string,
  leaseId: string | undefined,
  held: number | undefined,
): VizState {
  let index = leaseId ? state.tokens.holders.findIndex((h) => h.leaseId === leaseId) : -1;
  // Holders from a live sample carry no lease id: match them by holder and endpoint.
  if (index < 0)
    index = state.tokens.holders.findIndex(
      (h) => h.leaseId === null && h.holder === holder && h.endpoint === endpointId,
    );
  const holders = index < 0 ? state.tokens.holders : state.tokens.holders.filter((_, i) => i !== index);
  let next: VizState = {
    ...state,
    tokens: { ...state.tokens, held: held ?? holders.length, holders },
  };
  if (endpointId && (index >= 0 || own(next.endpoints, endpointId))) {
    const ep = endpointOf(next, endpointId);
    next = putEndpoint(next, { ...ep, inFlight: Math.max(0, ep.inFlight - 1) });
  }
  return next;
}

function tokenWait(
  state: VizState,
  agentName: string,
  endpointId: string,
  data: Record<string, unknown>,
  at: number,
): VizState {
  const until = num(data.until);
  const cause = str(data.cause) ?? 'wait';
  let next = state;
  if (endpointId && until !== undefined) {
    const ep = endpointOf(next, endpointId);
    if (cause === 'cooldown')
      next = putEndpoint(next, { ...ep, cooldownUntil: Math.max(ep.cooldownUntil, until) });
    else if (cause === 'disabled')
      next = putEndpoint(next, { ...ep, disabledUntil: Math.max(ep.disabledUntil, until) });
    else next = putEndpoint(next, ep);
  }
  if (agentName) {
    const agent = agentOf(next, agentName);
    next = putAgent(next, {
      ...agent,
      coolingUntil: until ?? null,
      lastEndpoint: endpointId || agent.lastEndpoint,
    });
  }
  const inMs = until !== undefined ? ` ${Math.max(0, Math.round(until - at))} ms` : '';
  return withLine(next, at, 'token.wait', `${agentName} waits for ${endpointId} (${cause}${inMs})`);
}

function breakerState(
  state: VizState,
  endpointId: string,
  data: Record<string, unknown>,
  at: number,
): VizState {
  if (!endpointId) return state;
  const ep = endpointOf(state, endpointId);
  const to = str(data.state);
  const breaker: VizEndpoint['breaker'] = to === 'open' || to === 'halfOpen' ? to : 'closed';
  const openUntil = data.openUntil === null ? null : (num(data.openUntil) ?? ep.openUntil);
  const closed = breaker === 'closed';
  const next = putEndpoint(state, {
    ...ep,
    breaker,
    openUntil: closed ? null : openUntil,
    // Closing after good probes clears the endpoint's cooldown and credit disable (as the pool does).
    ...(closed && ep.breaker === 'halfOpen'
      ? { cooldownUntil: 0, disabledUntil: 0, disabledReason: null }
      : {}),
  });
  return withLine(next, at, 'breaker.state', `${endpointId} breaker ${breakerLabel(breaker)}`);
}

function turnCompleted(
  state: VizState,
  agentName: string,
  endpointId: string | null,
  data: Record<string, unknown>,
  at: number,
): VizState {
  if (!agentName) return state;
  const agent = agentOf(state, agentName);
  const degraded = data.degraded === true;
  const outcome = str(data.outcome) ?? null;
  const next = putAgent(state, {
    ...agent,
    tier: agent.tier ?? str(data.tier) ?? null,
    turns: agent.turns + 1,
    degradedTurns: agent.degradedTurns + (degraded ? 1 : 0),
    attempts: 0,
    // The latest fault stays the reason (a fallback that skips an OPEN endpoint met it earlier); a
    // degraded turn with no fault of its own says why it degraded.
    reason: degraded
      ? (agent.reason ?? {
          at,
          kind: str(data.degradedReason) ?? 'degraded',
          endpoint: endpointId,
          status: null,
          retryAfterMs: null,
        })
      : agent.reason,
    lastOutcome: outcome,
    lastEndpoint: endpointId ?? agent.lastEndpoint,
  });
  return withLine(
    next,
    at,
    'turn.completed',
    `${agentName} turn ${outcome ?? '?'}${endpointId ? ` via ${endpointId}` : ''}`,
  );
}

function sample(state: VizState, at: number, data: VizSampleEvent['data']): VizState {
  let next = state;
  for (const a of data.agents ?? []) {
    const known = own(next.agents, a.name);
    const agent: VizAgent = known
      ? {
          ...known,
          tier: a.tier ?? known.tier,
          chain: a.chain ?? known.chain,
          noAgent: a.noAgent ?? known.noAgent,
        }
      : newAgent(a.name, a);
    next = moveAgent(next, agent, a.state, at, a.path ?? null);
  }
  for (const h of data.endpoints ?? []) {
    const ep = endpointOf(next, h.id);
    next = putEndpoint(next, {
      ...ep,
      provider: h.descriptor?.provider ?? ep.provider,
      model: h.descriptor?.model ?? ep.model,
      keyFingerprint: h.descriptor?.keyFingerprint ?? ep.keyFingerprint,
      breaker: h.breaker,
      openUntil: h.openUntil,
      cooldownUntil: h.cooldownUntil,
      disabledUntil: h.disabledUntil,
      disabledReason: h.disabledReason ?? null,
      inFlight: h.inFlight,
      rpm: bucket(h.rpm),
      tpm: bucket(h.tpm),
    });
  }
  if (data.tokens) {
    const queue: Record<string, string[]> = Object.create(null);
    for (const q of data.tokens.queue) queue[q.tier] = [...(own(queue, q.tier) ?? []), q.agent];
    next = {
      ...next,
      tokens: {
        limit: data.tokens.limit,
        held: data.tokens.held,
        holders: data.tokens.holders.map((h) => ({
          leaseId: null,
          holder: h.holder,
          endpoint: h.endpointId,
        })),
        queue,
      },
    };
  }
  return next;
}

function bucket(b: { capacity?: number; available?: number } | undefined): VizBucket | null {
  if (!b || (b.capacity === undefined && b.available === undefined)) return null;
  return { capacity: b.capacity ?? null, available: b.available ?? null };
}

/**
 * How the page writes a breaker state: `CLOSED`, `OPEN`, `HALF-OPEN`.
 *
 * @example
 * ```ts
 * breakerLabel('halfOpen'); // 'HALF-OPEN'
 * ```
 */
export function breakerLabel(state: string): string {
  return state === 'halfOpen' ? 'HALF-OPEN' : state.toUpperCase();
}
