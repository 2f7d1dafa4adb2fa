import { describe, expect, it } from 'vitest';
import { eventFromRecord, eventsFromRecords } from '../../src/core/stored-event.ts';

/* The one decoder of the event log, as the report, the planner, the workers' parent and the visualizer read it. */

describe('a stored event row back into its runtime event', () => {
  it('nulls become absent fields; a data that is not an object reads as {}; an at sent as text is a number', () => {
    expect(
      eventFromRecord({
        at: 5,
        type: 'turn.completed',
        agent: 'Kai',
        endpoint: null,
        data: { outcome: 'answered' },
      }),
    ).toEqual({ at: 5, type: 'turn.completed', agent: 'Kai', data: { outcome: 'answered' } });
    for (const data of [null, undefined, 3, 'text'])
      expect(eventFromRecord({ at: 1, type: 'x', agent: null, data })).toEqual({
        at: 1,
        type: 'x',
        data: {},
      });
    expect(eventFromRecord({ at: '7' as unknown as number, type: 'x' }).at).toBe(7);
  });

  it('rows are read in log order: seq, then insertion id', () => {
    const rows = [
      { seq: 2, id: 1, at: 30, type: 'c' },
      { seq: 1, id: 9, at: 20, type: 'b' },
      { seq: 1, id: 3, at: 10, type: 'a' },
    ];
    expect(eventsFromRecords(rows).map((e) => e.type)).toEqual(['a', 'b', 'c']);
    expect(rows.map((r) => r.type)).toEqual(['c', 'b', 'a']);
  });
});
