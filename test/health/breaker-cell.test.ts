import fc from 'fast-check';
import { createActor } from 'xstate';
import { describe, expect, it } from 'vitest';
import { type BreakerEvent, breakerMachine } from '../../machines/breaker.machine.ts';
import { BreakerCell } from '../../src/health/breaker-cell.ts';

// BreakerCell.succeeded() counts successes without a machine step while they cannot change the breaker. Whatever
// the sequence, every reader must see what one CALL_SUCCEEDED per call leaves: checked against the bare machine.

const input = { windowMs: 6_000, minCallsInWindow: 3, consecutiveToOpen: 3, openMs: 2_000 };

type Step = { kind: 'ok' | 'fail' | 'tick' | 'force'; dt: number };

const steps = fc.array(
  fc.record({
    kind: fc.constantFrom<Step['kind']>('ok', 'ok', 'ok', 'ok', 'fail', 'tick', 'force'),
    dt: fc.integer({ min: 0, max: 1_500 }),
  }),
  { maxLength: 120 },
);

function eventOf(step: Step, at: number): BreakerEvent {
  if (step.kind === 'ok') return { type: 'CALL_SUCCEEDED', at };
  if (step.kind === 'fail') return { type: 'CALL_FAILED', at, kind: 'rate_limited' };
  if (step.kind === 'tick') return { type: 'TICK', at };
  return { type: 'FORCE_OPEN', at, untilMs: at + 500 };
}

describe('BreakerCell', () => {
  it('batched successes leave the same state, context and persisted snapshot as one event per call', () => {
    fc.assert(
      fc.property(steps, fc.integer({ min: 0, max: 10 }), (seq, readEvery) => {
        const cell = new BreakerCell(input);
        const reference = createActor(breakerMachine, { input }).start();
        let at = 1_000_000;
        seq.forEach((step, i) => {
          at += step.dt;
          const event = eventOf(step, at);
          const before = reference.getSnapshot().value;
          reference.send(event);
          const after = reference.getSnapshot().value;
          const got = event.type === 'CALL_SUCCEEDED' ? cell.succeeded(at) : cell.send(event);
          // The state is right at every step, and a step is reported whenever the machine's state changed.
          expect(cell.state).toBe(after);
          if (after !== before) expect(got).toEqual({ state: after, previous: before, changed: true });
          // Reading the context in between (a view, an export) must not change what follows.
          if (readEvery > 0 && i % readEvery === 0)
            expect(cell.context).toEqual(reference.getSnapshot().context);
        });
        expect(cell.context).toEqual(reference.getSnapshot().context);
        expect(cell.persisted()).toEqual(reference.getPersistedSnapshot());
      }),
      { numRuns: 300 },
    );
  });

  it('a healthy endpoint: a thousand successes in one bucket are one count of a thousand', () => {
    const cell = new BreakerCell(input);
    for (let i = 0; i < 1_000; i++) expect(cell.succeeded(5_000)).toBeUndefined();
    expect(cell.context.outcomes).toEqual([{ start: 5_000, calls: 1_000, failures: 0 }]);
  });
});
