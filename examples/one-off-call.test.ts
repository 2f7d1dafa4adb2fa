import { describe, expect, it } from 'vitest';
import { main } from './one-off-call.ts';

describe('examples/one-off-call.ts', () => {
  it('the primary answers 429; the call runs its typed tool and ends on the backup', async () => {
    const lines: string[] = [];
    const { turn, quoted } = await main({ print: (line) => lines.push(line) });
    expect(turn).toMatchObject({ outcome: 'fallback', endpointId: 'gpt', degraded: false });
    expect(turn.faults).toEqual([
      expect.objectContaining({ kind: 'rate_limited', status: 429, endpointId: 'claude' }),
    ]);
    // The emulator's model called the tool with a value its schema allows; the tool ran once, typed.
    expect(quoted).toEqual(['EURUSD']);
    expect(turn.messages.find((m) => m.role === 'tool_result')).toMatchObject({
      content: '1.0842',
      isError: false,
    });
    expect(turn.answer.text).toMatch(/^\[gpt-4o-mini\] The fx_rate tool returned: "1\.0842"/);
    expect(lines[0]).toBe(`fallback via gpt (gpt-4o-mini), ${turn.attempts} upstream calls`);
    expect(lines[1]).toBe('  fault: rate_limited (HTTP 429) on claude');
  });
});
