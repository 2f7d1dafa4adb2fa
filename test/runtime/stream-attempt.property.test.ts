import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { CallEngineInput, PartialAnswer } from '../../machines/agent.types.ts';
import type { EndpointDescriptor, EngineResult } from '../../src/core/engine-types.ts';
import type { Fault } from '../../src/core/fault.ts';
import { beginStreamAttempt } from '../../src/runtime/stream-attempt.ts';
import { type StreamEvent, TurnEventChannel } from '../../src/runtime/turn-stream.ts';

/*
 * The invariant of a streamed step, over any sequence of attempts (each on an endpoint that can or cannot continue
 * a prefix, each delivering some deltas — whitespace included — then failing or answering): the text the events
 * announce equals the final answer's text; a continuation's sources add up to what it kept; an attempt that failed
 * before its first delta shows nothing and leaves the partial answer as it was.
 */

const endpoint = (id: string, continues: boolean): EndpointDescriptor => ({
  id,
  provider: continues ? 'anthropic' : 'openai',
  model: 'm',
  keyFingerprint: 'none',
});

function announced(events: readonly StreamEvent[]): string {
  let text = '';
  for (const e of events) {
    if (e.type === 'endpoint') text = text.slice(0, e.kept);
    else if (e.type === 'step') text = '';
    else if (e.type === 'text') text += e.text;
  }
  return text;
}

const fault: Fault = { kind: 'network', provider: 'openai', message: 'terminated' };
const delta = fc.oneof(fc.string({ minLength: 1, maxLength: 6 }), fc.constantFrom(' ', '\n', 'a ', ' b'));
const attempt = fc.record({ continues: fc.boolean(), deltas: fc.array(delta, { maxLength: 5 }) });

describe('a streamed step over any attempts', () => {
  it('announces exactly the final text, never doubling or dropping a character', () => {
    fc.assert(
      fc.property(fc.array(attempt, { maxLength: 5 }), attempt, (failing, last) => {
        const events: StreamEvent[] = [];
        const channel = new TurnEventChannel(new Promise(() => {}), () => {});
        channel.push = (e) => {
          events.push(e);
        };
        let partial: PartialAnswer | undefined;
        const run = (a: { continues: boolean; deltas: string[] }, i: number, fails: boolean) => {
          const input = {
            endpointId: `e${i}`,
            chainPosition: i,
            step: 0,
            partial,
          } as unknown as CallEngineInput;
          const before = events.length;
          const shownBefore = announced(events);
          const s = beginStreamAttempt(channel, input, endpoint(`e${i}`, a.continues));
          // A prefill is the kept text, never with trailing whitespace.
          if (s.prefill !== undefined) expect(s.prefill).toBe(s.prefill.trimEnd());
          for (const d of a.deltas) s.sink.text(d);
          // What this attempt wrote (a cut call's output estimate): its own deltas, never the kept prefix.
          expect(s.receivedChars).toBe(a.deltas.join('').length);
          if (fails) {
            const next = s.failed(fault);
            if (a.deltas.length === 0) {
              // Nothing shown: only the fault event, and the partial answer unchanged.
              expect(events.slice(before).map((e) => e.type)).toEqual(['fault']);
              expect(next).toEqual(partial);
              expect(announced(events)).toBe(shownBefore);
            }
            partial = next;
            if (partial) expect(partial.text).toBe(announced(events));
            return undefined;
          }
          const own = Math.ceil(a.deltas.join('').length / 4);
          const result = {
            text: a.deltas.join(''),
            toolCalls: [],
            usage: { inputTokens: 1, outputTokens: own },
          } as unknown as EngineResult;
          const done = s.succeeded(result);
          expect(s.prefixTokens).toBe(s.prefill ? Math.max(1, Math.ceil(s.prefill.length / 4)) : 0);
          // The answer's usage is its own provider's, as it came: an attempt cut before it is a call of its own, whose
          // unreported usage the turn adds apart (faultUsage), so nothing of it is mixed into this one's counts.
          expect(done.usage).toBe(result.usage);
          return done;
        };
        for (const [i, a] of failing.entries()) run(a, i, true);
        const final = run(last, failing.length, false)!;
        expect(announced(events)).toBe(final.text);
        for (const e of events)
          if (e.type === 'endpoint' && e.mode === 'continuation')
            expect(e.sources.reduce((n, s) => n + s.chars, 0)).toBe(e.kept);
      }),
      { seed: 20261201, numRuns: 500 },
    );
  });
});
