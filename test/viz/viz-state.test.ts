import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock, type ManualClock } from '../../src/clock/clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import { eventFromRecord } from '../../src/core/stored-event.ts';
import { applyEvent, emptyVizState, foldEvents, stateAt } from '../../src/viz/viz-state.ts';
import type { VizState } from '../../src/viz/viz-state-types.ts';
import { ioTurn } from '../support/runtime-harness.ts';
import { breakerScenario } from './viz-scenario.ts';

/** What the runtime itself said at one instant (read from the supervisor, not from the events). */
interface Observed {
  readonly t: number;
  readonly analyst: string;
  readonly ops: string;
  readonly sonnet: string;
  readonly flash: string;
  readonly held: number;
}

let emulator: Emulator;
let clock: ManualClock;
let events: RuntimeEvent[];
let observed: Observed[];
let midStorm: VizState;
let sonnetAtStorm: { openUntil: number | null; cooldownUntil: number };

beforeAll(async () => {
  clock = createManualClock(Date.parse('2026-08-17T07:32:00+09:00'));
  emulator = await startEmulator({ profile: { seed: 11 }, clock });
  // The breaker's states are also read the moment it reports a change: a HALF-OPEN that opens and closes between
  // two polls (its probes answered within one step's I/O) is still seen. The truth at t stays the last reading at t.
  const scenario = breakerScenario(emulator, clock, {
    onEvent: (e) => {
      if (e.type === 'breaker.state') observe();
    },
  });
  const { supervisor } = scenario;
  events = scenario.events;
  observed = [];
  function observe() {
    const health = supervisor.health();
    observed.push({
      t: clock.now(),
      analyst: supervisor.agent('analyst')!.state(),
      ops: supervisor.agent('ops')!.state(),
      sonnet: health.find((h) => h.id === 'sonnet')!.breaker,
      flash: health.find((h) => h.id === 'flash')!.breaker,
      held: supervisor.tokens().held,
    });
  }
  observe();
  await scenario.storm();
  observe();
  midStorm = foldEvents(events);
  const sonnet = supervisor.health().find((h) => h.id === 'sonnet')!;
  sonnetAtStorm = { openUntil: sonnet.openUntil, cooldownUntil: sonnet.cooldownUntil };
  emulator.clearFaults();
  // Drive simulated time by hand, reading the runtime after the I/O of each instant and before the clock
  // moves on: every observation is the truth at its instant.
  const analyst = supervisor.agent('analyst')!;
  for (let step = 0; step < 120; step++) {
    for (let i = 0; i < 4; i++) await ioTurn();
    observe();
    const last = observed[observed.length - 1]!;
    if (last.analyst === 'idle' && last.sonnet === 'closed' && analyst.memory().utterances.length === 1)
      break;
    clock.advance(1_000);
  }
  await supervisor.stop();
});

afterAll(async () => {
  await emulator.close();
});

describe('applyEvent folds a real run (supervisor + emulator, manual clock)', () => {
  it('mid-storm: analyst cooling behind an OPEN breaker with a 429 marker; ops answered on flash', () => {
    const analyst = midStorm.agents.analyst!;
    expect(analyst.state).toBe('cooling');
    expect(analyst.markers.some((m) => m.rateLimited && m.status === 429 && m.endpoint === 'sonnet')).toBe(
      true,
    );
    expect(analyst.coolingUntil).toBeGreaterThan(midStorm.now!);
    const sonnet = midStorm.endpoints.sonnet!;
    expect(sonnet.breaker).toBe('open');
    expect(sonnet.openUntil).toBe(sonnetAtStorm.openUntil);
    expect(sonnet.cooldownUntil).toBe(sonnetAtStorm.cooldownUntil);
    expect(sonnet.faults).toBe(1);
    expect(sonnet.inFlight).toBe(0);
    const ops = midStorm.agents.ops!;
    expect(ops.state).toBe('idle');
    expect(ops.turns).toBe(1);
    expect(ops.lastEndpoint).toBe('flash');
    expect(midStorm.endpoints.flash!.breaker).toBe('closed');
    expect(midStorm.tokens.held).toBe(0);
    expect(midStorm.tokens.holders).toEqual([]);
  });

  it('after recovery: analyst idle, breaker CLOSED (open → halfOpen → closed), the timeline in order', () => {
    const end = foldEvents(events);
    const analyst = end.agents.analyst!;
    expect(analyst.state).toBe('idle');
    expect(analyst.turns).toBe(1);
    expect(analyst.degradedTurns).toBe(0);
    expect(analyst.lastEndpoint).toBe('sonnet');
    expect(end.endpoints.sonnet!.breaker).toBe('closed');
    expect(end.endpoints.sonnet!.openUntil).toBeNull();
    const breakers = events
      .filter((e) => e.type === 'breaker.state' && e.endpoint === 'sonnet')
      .map((e) => (e.data as { state: string }).state);
    expect(breakers).toEqual(['open', 'halfOpen', 'closed']);
    const states = analyst.segments.map((s) => s.state);
    // A token was free: the ASK went straight to calling (no queued step); the 429 sends it to queue, then cool.
    expect(states.slice(0, 3)).toEqual(['calling', 'queued', 'cooling']);
    expect(states.slice(-2)).toEqual(['calling', 'idle']);
    expect(states).not.toContain('degraded');
    // Segments tile time: each ends where the next begins; only the last is open.
    for (let i = 1; i < analyst.segments.length; i++)
      expect(analyst.segments[i - 1]!.to).toBe(analyst.segments[i]!.from);
    expect(analyst.segments.at(-1)!.to).toBeNull();
    expect(end.tokens.held).toBe(0);
    expect(end.endpoints.sonnet!.inFlight).toBe(0);
  });

  it('the state at instant t is what the runtime reported at t, and equals the fold of the events with at ≤ t', () => {
    expect(new Set(observed.map((o) => o.t)).size).toBeGreaterThan(30);
    const seen = new Set(observed.map((o) => o.sonnet));
    expect(seen).toEqual(new Set(['closed', 'open', 'halfOpen']));
    // Several things happen at one simulated instant: the truth at t is what holds once t's work is done.
    const lastAt = new Map(observed.map((o) => [o.t, o]));
    for (const o of lastAt.values()) {
      const s = stateAt(events, o.t);
      expect(s).toEqual(foldEvents(events.filter((e) => e.at <= o.t)));
      const at = { t: o.t, analyst: o.analyst, ops: o.ops, sonnet: o.sonnet, flash: o.flash, held: o.held };
      expect({
        t: o.t,
        analyst: s.agents.analyst?.state ?? 'idle',
        ops: s.agents.ops?.state ?? 'idle',
        sonnet: s.endpoints.sonnet?.breaker ?? 'closed',
        flash: s.endpoints.flash?.breaker ?? 'closed',
        held: s.tokens.held,
      }).toEqual(at);
    }
  });

  it('is pure: folding frozen events into a frozen state changes neither', () => {
    const freeze = <T>(v: T): T => {
      if (v && typeof v === 'object') {
        for (const k of Object.keys(v)) freeze((v as Record<string, unknown>)[k]);
        Object.freeze(v);
      }
      return v;
    };
    const frozen = freeze(structuredClone(events));
    const start = freeze(emptyVizState({ limit: 2 }));
    const a = foldEvents(frozen, start);
    const b = foldEvents(structuredClone(events), emptyVizState({ limit: 2 }));
    expect(a).toEqual(b);
    expect(start.agents).toEqual({});
    expect(a.tokens.limit).toBe(2);
  });

  it('reads stored rows (nulls for absent agent/endpoint) like the events themselves', () => {
    const rows = events.map((e, i) => ({
      seq: i + 1,
      at: e.at,
      type: e.type,
      agent: e.agent ?? null,
      endpoint: e.endpoint ?? null,
      data: JSON.parse(JSON.stringify(e.data)),
    }));
    expect(foldEvents(rows.map(eventFromRecord))).toEqual(foldEvents(events));
  });

  it('says why an agent waits for a paced endpoint instead of taking a ready one (route.wait)', () => {
    const s = applyEvent(
      emptyVizState(),
      eventFromRecord({
        at: 10,
        type: 'route.wait',
        agent: 'Kai',
        endpoint: 'primary',
        data: { until: 400, insteadOf: 'backup', expectedMs: 890.4, insteadExpectedMs: 2_000 },
      }),
    );
    expect(s.recent.at(-1)).toEqual({
      at: 10,
      type: 'route.wait',
      text: 'Kai waits for primary (~890 ms) rather than backup (~2000 ms)',
    });
  });

  it('ignores unknown event types and malformed data instead of failing', () => {
    let s = emptyVizState();
    s = applyEvent(s, eventFromRecord({ at: 5, type: 'something.new', data: { x: 1 } }));
    s = applyEvent(s, eventFromRecord({ at: 6, type: 'breaker.state', endpoint: 'e1', data: null }));
    s = applyEvent(s, eventFromRecord({ at: 7, type: 'agent.state', agent: 'a', data: 'nonsense' }));
    expect(s.now).toBe(7);
    expect(s.applied).toBe(3);
    expect(s.endpoints.e1!.breaker).toBe('closed');
    expect(s.agents.a!.state).toBe('idle');
  });
});
