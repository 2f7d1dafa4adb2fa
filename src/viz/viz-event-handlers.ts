import type { AgentInfo } from '../core/runtime-event.ts';
import type {
  VizAgent,
  VizBucket,
  VizCall,
  VizEndpoint,
  VizSampleEvent,
  VizState,
} from './viz-state-types.ts';

import {
  str,
  num,
  withLine,
  newAgent,
  own,
  agentOf,
  endpointOf,
  putAgent,
  putEndpoint,
} from './viz-state-access.ts';

/*
 * What each event does to the visualizer's state, one function per event type, for the reducer in viz-state.ts.
 * Pure, as the reducer is: a new state out, the old one untouched.
 */

export function runStarted(state: VizState, at: number, data: Record<string, unknown>): VizState {
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
export function moveAgent(
  state: VizState,
  agent: VizAgent,
  to: string,
  at: number,
  path: string | null,
): VizState {
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
export function withQueue(state: VizState, agent: VizAgent, previous: string): VizState {
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

export function agentState(state: VizState, name: string, to: string, at: number): VizState {
  if (!name) return state;
  const agent = agentOf(state, name);
  return withLine(moveAgent(state, agent, to, at, null), at, 'agent.state', `${name} → ${to}`);
}

export function callAttempt(
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

export function tokenGranted(
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

export function tokenReleased(
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

export function tokenWait(
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

export function breakerState(
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

export function turnCompleted(
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

export function sample(state: VizState, at: number, data: VizSampleEvent['data']): VizState {
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

export function bucket(b: { capacity?: number; available?: number } | undefined): VizBucket | null {
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
