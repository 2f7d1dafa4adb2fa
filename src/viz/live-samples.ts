import type { Clock } from '../clock/clock.ts';
import type { Supervisor } from '../runtime/create-supervisor.ts';
import type { VizAgentSample, VizHealthSample, VizSampleEvent } from './viz-state-types.ts';

/*
 * The live feed's samples of a running supervisor (what moves without events: bucket levels, countdowns,
 * each agent's full state path), and the deltas the feed carries instead of full samples.
 */

/** Bucket levels as the page shows them (whole tokens): a refill of a fraction is not a change. */
function roundedHealth(h: VizHealthSample): VizHealthSample {
  const level = (b: VizHealthSample['rpm']) =>
    b ? { ...b, ...(b.available !== undefined ? { available: Math.floor(b.available) } : {}) } : b;
  return { ...h, ...(h.rpm ? { rpm: level(h.rpm) } : {}), ...(h.tpm ? { tpm: level(h.tpm) } : {}) };
}

/**
 * What changed since the previous sample: the agents and endpoints whose JSON differs, the tokens when they
 * differ. The reducer folds a partial sample as well as a full one (absent parts are left as they are), so
 * the feed carries deltas, not full samples.
 */
export function sampleDelta(previous: Map<string, string>, full: VizSampleEvent): VizSampleEvent {
  const agents = (full.data.agents ?? []).filter((a) => changed(previous, `a:${a.name}`, a));
  const endpoints = (full.data.endpoints ?? []).filter((e) => changed(previous, `e:${e.id}`, e));
  const tokens = full.data.tokens && changed(previous, 't', full.data.tokens) ? full.data.tokens : undefined;
  return {
    type: 'viz.sample',
    at: full.at,
    data: {
      ...(agents.length ? { agents } : {}),
      ...(endpoints.length ? { endpoints } : {}),
      ...(tokens ? { tokens } : {}),
    },
  };
}

function changed(previous: Map<string, string>, key: string, value: unknown): boolean {
  const json = JSON.stringify(value);
  if (previous.get(key) === json) return false;
  previous.set(key, json);
  return true;
}

function pathOf(value: unknown): string {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object') {
    const [key, child] = Object.entries(value)[0] ?? ['idle', undefined];
    return child === undefined ? key : `${key}.${pathOf(child)}`;
  }
  return 'idle';
}

/**
 * A full sample of the supervisor now, stamped with `clock`: `health()` (breakers, cooldowns, bucket levels,
 * in flight), `tokens()` (held, limit, queue by tier) and each agent's full state path.
 */
export function sampleSupervisor(supervisor: Supervisor, clock: Clock): VizSampleEvent {
  const agents: VizAgentSample[] = supervisor.agents().map((h) => {
    const snap = h.actor?.getSnapshot() as
      | { value: unknown; status: string; context?: { settings?: { chain?: string } } }
      | undefined;
    const chain = snap?.context?.settings?.chain;
    const path = snap && snap.status === 'active' ? pathOf(snap.value) : undefined;
    return {
      name: h.name,
      tier: h.tier,
      state: h.state(),
      ...(chain ? { chain } : {}),
      ...(snap ? {} : { noAgent: true }),
      ...(path ? { path } : {}),
    };
  });
  return {
    type: 'viz.sample',
    at: clock.now(),
    data: {
      agents,
      endpoints: supervisor.health().map((h) => roundedHealth(h as VizHealthSample)),
      tokens: supervisor.tokens(),
    },
  };
}
