import type { AgentInfo } from '../core/runtime-event.ts';
import { MAX_RECENT, type VizAgent, type VizEndpoint, type VizState } from './viz-state-types.ts';

/*
 * Reading and writing the visualizer's state for the event handlers: fields of an event's data read defensively,
 * an agent or endpoint looked up (made when first seen), put back into a new state, a line added to the recent ones.
 */

export function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

export function num(v: unknown): number | undefined {
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

export function capped<T>(items: readonly T[], max: number): readonly T[] {
  return items.length > max ? items.slice(items.length - max) : items;
}

export function withLine(state: VizState, at: number, type: string, text: string): VizState {
  return { ...state, recent: capped([...state.recent, { at, type, text }], MAX_RECENT) };
}

export function newAgent(name: string, info: Partial<AgentInfo> = {}): VizAgent {
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

export function newEndpoint(id: string): VizEndpoint {
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
export function own<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined;
}

export function agentOf(state: VizState, name: string): VizAgent {
  return own(state.agents, name) ?? newAgent(name);
}

export function endpointOf(state: VizState, id: string): VizEndpoint {
  return own(state.endpoints, id) ?? newEndpoint(id);
}

export function putAgent(state: VizState, agent: VizAgent): VizState {
  return { ...state, agents: { ...state.agents, [agent.name]: agent } };
}

export function putEndpoint(state: VizState, endpoint: VizEndpoint): VizState {
  return { ...state, endpoints: { ...state.endpoints, [endpoint.id]: endpoint } };
}
