import { describe, expect, it } from 'vitest';
import { main } from './streaming.ts';

describe('examples/streaming.ts', () => {
  it('the primary stream is cut; the answer continues on the next endpoint, whole and once', async () => {
    const lines: string[] = [];
    let written = '';
    const { turn, text, events } = await main({ write: (t) => (written += t), print: (l) => lines.push(l) });
    // The next usable endpoint is the scheduler's pick: claude-b (fallback), or claude-a again once it may retry.
    expect(['answered', 'fallback']).toContain(turn.outcome);
    expect(turn.faults.map((f) => f.kind)).toEqual(['network']);
    expect(text).toBe(turn.answer.text);
    // A continuation keeps everything shown (at most trailing whitespace is taken back): what was written is the answer.
    expect(written.replace(/\s+/g, ' ')).toBe(turn.answer.text.replace(/\s+/g, ' '));
    const continued = events.find((e) => e.type === 'endpoint' && e.mode === 'continuation');
    expect(continued).toMatchObject({ endpointId: turn.endpointId, sources: [{ endpointId: 'claude-a' }] });
    expect(lines.some((l) => l.includes('[fault on claude-a after 48 chars: network]'))).toBe(true);
  });
});
