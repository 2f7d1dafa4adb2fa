import { describe, expect, it } from 'vitest';
import type { RuntimeEvent } from '../../src/core/runtime-event.ts';
import { roundTokenTime } from '../../src/report/round-token-time.ts';

/*
 * A round's token time from its events: its span, its tail on fewer tokens than the limit (from the last instant
 * every token was in a call to its commit), and the time tokens were free while agents were queued for one.
 */

const call = (startedAt: number, end: number, agent: string): RuntimeEvent =>
  ({
    type: 'call.attempt',
    at: end,
    agent,
    endpoint: 'e',
    data: {
      tier: 'ops',
      outcome: 'ok',
      startedAt,
      latencyMs: end - startedAt,
      provider: 'openai',
      model: 'm',
    },
  }) as RuntimeEvent;
const state = (at: number, agent: string, s: string): RuntimeEvent => ({
  type: 'agent.state',
  at,
  agent,
  data: { state: s, previous: 'idle' },
});
const round = (n: number, start: number, end: number): RuntimeEvent[] => [
  { type: 'round.started', at: start, data: { round: n } },
  { type: 'round.committed', at: end, data: { round: n, turns: 1 } },
];

describe('a round’s token time', () => {
  it('measures the tail from the last instant all tokens were busy, and the free time while an agent queued', () => {
    // Limit 2. Round 1 (0–100): two calls fill both tokens until 50; then one call 50–90 while B is queued 50–70
    // (its endpoint paced, say) and calls 70–80, filling both again: the last full instant is 80.
    const events = [
      ...round(1, 0, 100),
      call(0, 50, 'A'),
      call(0, 50, 'C'),
      state(50, 'B', 'queued'),
      call(50, 90, 'A'),
      state(70, 'B', 'calling'),
      call(70, 80, 'B'),
    ];
    expect(roundTokenTime(events, 2)).toEqual([
      { round: 1, spanMs: 100, tailMs: 20, idleWhileWaitingMs: 20 },
    ]);
  });

  it('a round never at the limit is all tail; rounds are apart, and a call spanning two counts in each', () => {
    const events = [
      ...round(1, 0, 100),
      ...round(2, 100, 200),
      call(0, 100, 'A'),
      call(0, 150, 'B'),
      call(150, 200, 'A'),
      state(160, 'C', 'queued'),
    ];
    expect(roundTokenTime(events, 3)).toEqual([
      { round: 1, spanMs: 100, tailMs: 100, idleWhileWaitingMs: 0 },
      { round: 2, spanMs: 100, tailMs: 100, idleWhileWaitingMs: 40 },
    ]);
    // With 2 tokens, round 1 was full throughout: no tail.
    expect(roundTokenTime(events, 2)[0]).toEqual({ round: 1, spanMs: 100, tailMs: 0, idleWhileWaitingMs: 0 });
  });

  it('leaves out a round that was not committed', () => {
    const events: RuntimeEvent[] = [{ type: 'round.started', at: 0, data: { round: 1 } }, call(0, 10, 'A')];
    expect(roundTokenTime(events, 1)).toEqual([]);
  });
});
