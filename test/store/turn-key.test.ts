import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { escapeKeyPart, keyFormatOf, roundKeyPrefix, turnKey } from '../../src/store/turn-key.ts';

/*
 * Issue 42: turn keys were the parts joined with `:` as they are, so item `I1` + agent `I1:Kai` and item `I1:I1` +
 * agent `Kai` met in one key, and a resumed round committed one turn with the other's memoized answer.
 */

// Parts drawn mostly from the characters that matter (the separator, the escape, digits that look like a round).
const part = fc.oneof(
  fc.string({
    unit: fc.constantFrom(':', '%', '3', 'A', 'a', '1', 'I', 'K', '2', '5'),
    minLength: 1,
    maxLength: 8,
  }),
  fc.string({ minLength: 1, maxLength: 12 }),
);
const tuple = fc.record({
  runId: part,
  round: fc.integer({ min: 1, max: 1_000 }),
  itemId: part,
  agent: part,
  call: fc.integer({ min: 0, max: 20 }),
});
const callKey = (t: { runId: string; round: number; itemId: string; agent: string; call: number }) =>
  `${turnKey(t)}:call${t.call}`;

describe('turn keys', () => {
  it('the reported collision gives two keys', () => {
    const a = turnKey({ runId: 'r', round: 1, itemId: 'I1', agent: 'I1:Kai' });
    const b = turnKey({ runId: 'r', round: 1, itemId: 'I1:I1', agent: 'Kai' });
    expect(a).not.toBe(b);
    // The stored format of older runs is kept for them, ambiguity included: their memo is read as it was written.
    expect(turnKey({ runId: 'r', round: 1, itemId: 'I1', agent: 'I1:Kai' }, 1)).toBe('r:1:I1:I1:Kai');
  });

  it('no two distinct (run, round, item, agent, call) tuples give the same key (fast-check, fixed seed)', () => {
    fc.assert(
      fc.property(tuple, tuple, (x, y) => {
        const same =
          x.runId === y.runId &&
          x.round === y.round &&
          x.itemId === y.itemId &&
          x.agent === y.agent &&
          x.call === y.call;
        return (
          (callKey(x) === callKey(y)) === same && (turnKey(x) === turnKey(y)) === (same || sameTurn(x, y))
        );
      }),
      { seed: 4242, numRuns: 20_000 },
    );
  });

  it('a key splits back into exactly its parts, and a round prefix starts only its own round’s keys', () => {
    fc.assert(
      fc.property(tuple, part, fc.integer({ min: 1, max: 1_000 }), (t, otherRun, otherRound) => {
        const fields = callKey(t).split(':');
        const unescapePart = (s: string) => decodeURIComponent(s);
        const back = [
          unescapePart(fields[0]!),
          Number(fields[1]),
          unescapePart(fields[2]!),
          unescapePart(fields[3]!),
          fields[4],
        ];
        const own = callKey(t).startsWith(roundKeyPrefix(t.runId, t.round));
        const foreign =
          (otherRun !== t.runId || otherRound !== t.round) &&
          callKey(t).startsWith(roundKeyPrefix(otherRun, otherRound));
        return (
          fields.length === 5 &&
          JSON.stringify(back) === JSON.stringify([t.runId, t.round, t.itemId, t.agent, `call${t.call}`]) &&
          own &&
          !foreign
        );
      }),
      { seed: 4243, numRuns: 10_000 },
    );
  });

  it('plain names keep the key they always had; a stored run without a format reads as format 1', () => {
    expect(turnKey({ runId: 'run-1', round: 3, itemId: 'I7', agent: 'Kai' })).toBe('run-1:3:I7:Kai');
    expect(escapeKeyPart('50%:x')).toBe('50%25%3Ax');
    expect(keyFormatOf({ policy: 'breakwater' })).toBe(1);
    expect(keyFormatOf(null)).toBe(1);
    expect(keyFormatOf({ keyFormat: 2 })).toBe(2);
  });
});

function sameTurn(
  x: { runId: string; round: number; itemId: string; agent: string },
  y: { runId: string; round: number; itemId: string; agent: string },
): boolean {
  return x.runId === y.runId && x.round === y.round && x.itemId === y.itemId && x.agent === y.agent;
}
