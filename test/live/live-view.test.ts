import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createManualClock } from '../../src/clock/clock.ts';
import { createScaledClock } from '../../src/clock/scaled-clock.ts';
import { type Emulator, startEmulator } from '../../src/emulator/emulator-server.ts';
import type { RuntimeEvent, RuntimeEventListener } from '../../src/core/runtime-event.ts';
import { createLiveView, type LiveStream, type LiveView } from '../../src/live/live-view.ts';
import { type RecordedRun, recordRun, testEndpoint } from '../report/record-run.ts';

/*
 * The live view on a real short run (agents against the emulator, whose primary key runs out of
 * credit), in plain mode (a pipe) and in terminal mode (a fake TTY stream capturing the writes);
 * then terminal frames driven by hand-made events for the states a short run passes too fast.
 */

const T0 = Date.parse('2026-08-17T07:00:00+09:00');
/** ANSI escape sequences (cursor moves, erases, synchronized output). */
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;?]*[A-Za-z]`, 'g');

function captureStream(isTTY: boolean): LiveStream & { chunks: string[] } {
  const chunks: string[] = [];
  return {
    isTTY,
    columns: 120,
    rows: 50,
    chunks,
    write(chunk: string) {
      chunks.push(chunk);
      return true;
    },
  };
}

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({
    clock: createScaledClock({ origin: T0, scale: 20 }),
    profile: {
      seed: 4,
      latency: { minMs: 100, maxMs: 300 },
      keys: [
        { alias: 'primary', key: 'sk-test-primary-000000000000', credit: 400 },
        { alias: 'backup', key: 'sk-test-backup-000000000000' },
      ],
    },
  });
});
afterAll(async () => {
  await emulator.close();
});

const AGENTS = [
  { name: 'Kai', tier: 'analysis', chain: 'premium' },
  { name: 'Yuna', tier: 'analysis', chain: 'premium' },
  { name: 'Rex', tier: 'ops', chain: 'premium' },
] as const;

async function creditRun(
  runId: string,
  out: LiveStream,
  isTTY: boolean,
): Promise<{ recorded: RecordedRun; live: LiveView }> {
  emulator.reset();
  // A fresh clock per run: each run starts at the simulated 07:00 with the emulator's credit reset.
  const clock = createScaledClock({ origin: T0, scale: 20 });
  let live: LiveView | undefined;
  const recorded = await recordRun({
    runId,
    scenario: 'live-credit',
    emulator,
    clock,
    config: {
      endpoints: [
        testEndpoint(emulator, 'primary', 'openai', 'gpt-4o', 'sk-test-primary-000000000000'),
        testEndpoint(emulator, 'backup', 'anthropic', 'claude-sonnet-4-6', 'sk-test-backup-000000000000'),
      ],
      chains: { premium: ['primary', 'backup'] },
    },
    agents: AGENTS,
    items: ['a', 'b', 'c'],
    rounds: 1,
    attach: (supervisor) => {
      live = createLiveView({ source: supervisor, out, isTTY, clock, plainDetail: 'all' });
      return undefined;
    },
    onProgress: (p) => live?.setProgress(p),
  });
  return { recorded, live: live! };
}

describe('plain mode (not a terminal): one log line per state change and progress step', () => {
  it('logs every agent state change the runtime emitted, in order, the progress, and the /byok hint once', async () => {
    const out = captureStream(false);
    const { recorded, live } = await creditRun('live-plain', out, false);
    live.stop();
    const lines = out.chunks.join('').split('\n').filter(Boolean);
    expect(out.chunks.join('')).not.toMatch(ANSI);
    for (const line of lines) expect(line).toMatch(/^\[\+\d+(\.\d)?(ms|s|m|h)\] \S/);
    const text = lines.map((l) => l.replace(/^\[[^\]]+\] /, ''));

    const stateChanges = recorded.events
      .filter((e): e is Extract<RuntimeEvent, { type: 'agent.state' }> => e.type === 'agent.state')
      .map((e) => `${e.agent} ${e.data.state} (was ${e.data.previous})`);
    expect(stateChanges.length).toBeGreaterThan(AGENTS.length);
    expect(text.filter((l) => / \(was \w+\)$/.test(l) && !l.startsWith('endpoint '))).toEqual(stateChanges);
    // Each agent called: straight from idle when a token was free, else after queueing for one.
    for (const a of AGENTS)
      expect(
        text.some((l) => l === `${a.name} calling (was idle)` || l === `${a.name} calling (was queued)`),
      ).toBe(true);

    const progress = text.filter((l) => l.startsWith('round 1/1: '));
    expect(progress[0]).toBe('round 1/1: 0/9 done');
    expect(progress.at(-1)).toBe('round 1/1: 9/9 done');
    expect(progress).toHaveLength(10);

    // The primary key ran out of credit during the run: the hint names its provider, once.
    expect(recorded.turns.some((t) => t.outcome === 'fallback')).toBe(true);
    const hints = text.filter((l) => l.includes('/byok'));
    expect(hints).toEqual([
      'credit exhausted on primary (openai): type /byok openai KEY to let the agents go on with your own key',
    ]);
  });
});

describe('terminal mode (a fake TTY)', () => {
  it('draws with log-update: one line per agent, endpoints with their health, the /byok line while out of credit', async () => {
    const out = captureStream(true);
    const { live } = await creditRun('live-tty', out, true);
    live.flush();
    const frame = live.frame();
    live.stop();
    // log-update wraps each frame in synchronized-output codes on a TTY.
    expect(out.chunks.length).toBeGreaterThan(0);
    expect(out.chunks.every((c) => c.startsWith('\u001B[?2026h'))).toBe(true);

    const agentsAt = frame.indexOf('agents');
    const endpointsAt = frame.indexOf('endpoints');
    const agentLines = frame.slice(agentsAt + 1, endpointsAt);
    expect(agentLines.map((l) => l.trim().split(/\s+/)[0])).toEqual(AGENTS.map((a) => a.name));
    for (const line of agentLines) {
      expect(line).toMatch(/^ {2}\S+\s+(idle|queued|calling|fallback|tools|cooling|degraded|stopped)\s+/);
      expect(line).toMatch(/3 turns/);
    }
    expect(frame[0]).toMatch(/^breakwater {2}round 1\/1 {2}9\/9 █{20} 100% {2}tokens \d\/3/);
    const endpointLines = frame.slice(endpointsAt + 1).filter((l) => l.startsWith('  '));
    expect(endpointLines.map((l) => l.trim().split(/\s+/)[0])).toEqual(['primary', 'backup']);
    expect(endpointLines[0]).toMatch(/disabled|out of credit/);
    expect(frame.at(-1)).toBe(
      'credit exhausted on primary (openai): type /byok openai KEY to let the agents go on with your own key',
    );
    // Every line fits the 120 columns of the stream.
    for (const line of frame) expect(line.length).toBeLessThan(120);
  });

  it('hand-made events: cooling countdown, an open breaker, the hint gone once a call succeeds again', () => {
    const clock = createManualClock(T0);
    const listeners = new Set<RuntimeEventListener>();
    const emit = (e: RuntimeEvent) => {
      for (const l of listeners) l(e);
    };
    const out = captureStream(true);
    const live = createLiveView({
      source: {
        subscribeEvents: (l) => {
          listeners.add(l);
          return () => listeners.delete(l);
        },
      },
      agents: [
        { name: 'Andrew', tier: 'ops' },
        { name: 'Hana', tier: 'analysis' },
        { name: 'flusher', tier: 'ops', noAgent: true },
      ],
      out,
      clock,
    });
    expect(live.mode).toBe('tty');
    emit({ type: 'agent.state', at: T0, agent: 'Andrew', data: { state: 'cooling', previous: 'calling' } });
    emit({
      type: 'token.wait',
      at: T0,
      agent: 'Andrew',
      endpoint: 'sonnet',
      data: { until: T0 + 4_200, cause: 'cooldown' },
    });
    emit({
      type: 'call.attempt',
      at: T0,
      agent: 'Hana',
      endpoint: 'pool',
      data: {
        tier: 'analysis',
        outcome: 'fault',
        startedAt: T0 - 50,
        latencyMs: 50,
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        faultKind: 'credit_exhausted',
        status: 400,
      },
    });
    emit({ type: 'agent.state', at: T0, agent: 'Hana', data: { state: 'degraded', previous: 'fallback' } });
    emit({
      type: 'breaker.state',
      at: T0,
      endpoint: 'sonnet',
      data: { state: 'open', previous: 'closed', openUntil: T0 + 30_000 },
    });
    live.setProgress({ round: 2, rounds: 3, done: 7, total: 35 });
    clock.advance(1_000);
    const frame = live.frame();
    expect(frame[0]).toMatch(/^breakwater {2}round 2\/3 {2}7\/35 █{4}░{16} 20%$/);
    expect(frame).toContain('  Andrew   cooling    via sonnet, waits 3.2s, 0 turns');
    expect(frame).toContain('  Hana     degraded   via pool, 0 turns');
    expect(frame).toContain('  flusher  no_agent   plain code (no_agent), 0 turns');
    expect(frame.find((l) => l.startsWith('  sonnet'))).toMatch(/OPEN, probe in 29s/);
    expect(frame.at(-1)).toBe(
      'credit exhausted on pool (anthropic): type /byok anthropic KEY to let the agents go on with your own key',
    );
    emit({
      type: 'call.attempt',
      at: T0 + 2_000,
      agent: 'Hana',
      endpoint: 'pool',
      data: {
        tier: 'analysis',
        outcome: 'ok',
        startedAt: T0 + 1_900,
        latencyMs: 100,
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        status: 200,
      },
    });
    expect(live.frame().some((l) => l.includes('/byok'))).toBe(false);
    live.flush();
    const written = out.chunks.join('').replace(ANSI, '');
    expect(written).toContain('Andrew');
    live.stop();
    live.stop();
    const count = out.chunks.length;
    emit({
      type: 'agent.state',
      at: T0 + 3_000,
      agent: 'Andrew',
      data: { state: 'idle', previous: 'cooling' },
    });
    live.flush();
    // Stopped: unsubscribed, nothing more is written.
    expect(listeners.size).toBe(0);
    expect(out.chunks.length).toBe(count);
  });
});

describe('lines of your own, titles, and terminals without a size', () => {
  function handSource() {
    const listeners = new Set<RuntimeEventListener>();
    return {
      emit: (e: RuntimeEvent) => {
        for (const l of listeners) l(e);
      },
      source: {
        subscribeEvents: (l: RuntimeEventListener) => {
          listeners.add(l);
          return () => listeners.delete(l);
        },
      },
    };
  }
  const creditFault = (endpoint: string, at: number): RuntimeEvent => ({
    type: 'call.attempt',
    at,
    agent: 'Kai',
    endpoint,
    data: {
      tier: 'analysis',
      outcome: 'fault',
      startedAt: at - 10,
      latencyMs: 10,
      provider: 'openai',
      model: 'gpt-4o',
      faultKind: 'credit_exhausted',
      status: 429,
    },
  });

  it('a wait the provider asked for past maxRetryAfterMs is said in one line, for a 429 and for a rate-limit reset', () => {
    const { emit, source } = handSource();
    const out = captureStream(false);
    const live = createLiveView({ source, agents: ['Kai'], out });
    const YEAR = 365 * 86_400_000;
    emit({
      type: 'call.attempt',
      at: T0,
      agent: 'Kai',
      endpoint: 'primary',
      data: {
        tier: 'analysis',
        outcome: 'fault',
        startedAt: T0 - 10,
        latencyMs: 10,
        provider: 'anthropic',
        model: 'claude-sonnet-4-6',
        faultKind: 'rate_limited',
        status: 429,
        retryAfterMs: 900_000,
        retryAfterCappedFromMs: YEAR,
      },
    });
    emit({
      type: 'call.attempt',
      at: T0 + 1,
      agent: 'Kai',
      endpoint: 'backup',
      data: {
        tier: 'analysis',
        outcome: 'ok',
        startedAt: T0 - 9,
        latencyMs: 10,
        provider: 'openai',
        model: 'gpt-4o',
        status: 200,
        resetCappedFromMs: 2 * YEAR,
      },
    });
    // An ordinary 429 says nothing of a cap.
    emit(creditFault('other', T0 + 2));
    live.stop();
    const lines = out.chunks.join('').split('\n');
    expect(lines.filter((l) => l.includes('maxRetryAfterMs'))).toEqual([
      expect.stringContaining('endpoint primary asked to wait 8760h; waiting 15m instead (maxRetryAfterMs)'),
      expect.stringContaining(
        'endpoint backup: a rate-limit reset 17520h away was cut to its maxRetryAfterMs',
      ),
    ]);
  });

  it('terminal: log() puts the line above the frame and redraws the frame under it; one /byok line per provider', () => {
    const { emit, source } = handSource();
    const out = captureStream(true);
    const live = createLiveView({ source, agents: ['Kai'], out, title: 'agent8-storm  run r-1' });
    emit(creditFault('primary', T0));
    emit(creditFault('primary-andrew', T0 + 5));
    const frame = live.frame();
    expect(frame[0]).toBe('breakwater  agent8-storm  run r-1');
    expect(frame.filter((l) => l.includes('/byok'))).toEqual([
      'credit exhausted on primary, primary-andrew (openai): type /byok openai KEY to let the agents go on with your own key',
    ]);
    live.flush();
    const before = out.chunks.length;
    live.log('run r-1: scenario agent8-storm, policy breakwater');
    const after = out.chunks.slice(before).join('').replace(ANSI, '');
    // The persisted line first, then the whole frame again below it.
    expect(after.indexOf('run r-1: scenario agent8-storm')).toBeGreaterThanOrEqual(0);
    expect(after.indexOf('breakwater  agent8-storm  run r-1')).toBeGreaterThan(
      after.indexOf('run r-1: scenario agent8-storm'),
    );
    live.stop();
  });

  it('a key typed with /byok takes the hint away while it is in use; when it expires the hint comes back', () => {
    const { emit, source } = handSource();
    const out = captureStream(false);
    const live = createLiveView({ source, agents: ['Kai'], out, isTTY: false });
    emit(creditFault('primary', T0));
    const hint = (lines: string[]) => lines.filter((l) => l.includes('/byok'));
    expect(hint(live.frame())).toHaveLength(1);
    const byok = { sessionId: 'default', provider: 'openai', masked: 'sk-…a1b2' };
    emit({
      type: 'byok.injected',
      at: T0 + 1_000,
      endpoint: 'byok-openai-1',
      data: { ...byok, expiresAt: T0 + 7_200_000 },
    });
    expect(hint(live.frame())).toEqual([]);
    expect(live.frame().some((l) => l.startsWith('  byok-openai-1'))).toBe(true);
    emit({
      type: 'byok.expired',
      at: T0 + 2_000,
      endpoint: 'byok-openai-1',
      data: { ...byok, reason: 'idle' },
    });
    expect(hint(live.frame())).toHaveLength(1);
    expect(live.frame().some((l) => l.startsWith('  byok-openai-1'))).toBe(false);
    live.stop();
    expect(out.chunks.join('').split('\n').filter(Boolean)).toEqual([
      '[+0ms] credit exhausted on primary (openai): type /byok openai KEY to let the agents go on with your own key',
      '[+1.0s] your openai key sk-…a1b2 is in use as endpoint byok-openai-1',
      '[+2.0s] your openai key sk-…a1b2 was removed (idle)',
    ]);
  });

  it('plain: log() writes the line as it is; a TTY that reports no size gets plain lines too', () => {
    const { emit, source } = handSource();
    const out = { ...captureStream(true), rows: 0, columns: 0 };
    const live = createLiveView({ source, out, plainDetail: 'all' });
    expect(live.mode).toBe('plain');
    live.log('run r-2 starting');
    emit({ type: 'agent.state', at: T0, agent: 'Kai', data: { state: 'calling', previous: 'queued' } });
    live.stop();
    expect(out.chunks.join('')).toBe('run r-2 starting\n[+0ms] Kai calling (was queued)\n');
  });
  it('a streamed run: the agent line shows the tail of its growing text, gone when the turn ends', () => {
    const { source } = handSource();
    const out = captureStream(true);
    const live = createLiveView({ source, agents: ['Kai'], out, title: 'stream' });
    live.setText('Kai', 'The overnight batch finished late because');
    expect(live.frame().find((l) => l.includes('Kai'))).toContain(
      '› The overnight batch finished late because',
    );
    live.setText('Kai', `${'word '.repeat(40)}and the end is here`);
    const line = live.frame().find((l) => l.includes('Kai'))!;
    expect(line).toContain('…');
    expect(line.endsWith('and the end is here')).toBe(true);
    live.setText('Kai', '');
    expect(live.frame().find((l) => l.includes('Kai'))).not.toContain('›');
    live.stop();
  });
});

describe('plain mode, notable detail (the default)', () => {
  it('keeps cooling and progress steps of 10 %, and drops the routine idle → queued → calling/fallback churn', () => {
    const listeners: ((e: RuntimeEvent) => void)[] = [];
    const source = {
      subscribeEvents: (l: (e: RuntimeEvent) => void) => {
        listeners.push(l);
        return () => {};
      },
    };
    const out = {
      chunks: [] as string[],
      isTTY: false,
      write(c: string) {
        this.chunks.push(c);
        return true;
      },
    };
    const live = createLiveView({ source, agents: ['Kai'], out });
    const emit = (e: RuntimeEvent) => {
      for (const l of listeners) l(e);
    };
    const state = (state: string, previous: string, at: number) =>
      emit({ type: 'agent.state', at, agent: 'Kai', data: { state, previous } });
    state('queued', 'idle', 1);
    state('calling', 'queued', 2);
    state('idle', 'calling', 3);
    state('queued', 'idle', 4);
    state('cooling', 'queued', 5);
    state('queued', 'cooling', 6);
    state('fallback', 'queued', 7);
    for (let done = 0; done <= 40; done++) live.setProgress({ round: 1, rounds: 3, done, total: 40 });
    live.stop();
    const text = out.chunks.join('');
    expect(text).not.toMatch(/Kai calling \(was queued\)/);
    expect(text).not.toMatch(/Kai idle \(was calling\)/);
    expect(text).toMatch(/Kai cooling \(was queued\)/);
    expect(text).toMatch(/Kai queued \(was cooling\)/);
    expect(text).not.toMatch(/Kai fallback \(was queued\)/);
    expect(text.match(/round 1\/3: \d+\/40 done/g)).toHaveLength(11);
  });
});
