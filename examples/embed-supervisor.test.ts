import { describe, expect, it } from 'vitest';
import { main } from './embed-supervisor.ts';

describe('examples/embed-supervisor.ts', () => {
  it('answers through the tool on the primary, then on the fallback when the primary answers 429', async () => {
    const lines: string[] = [];
    const { turns, toolRuns } = await main({ print: (line) => lines.push(line) });
    const [first, second] = turns;

    // The model asked for the tool; the tool ran once per turn with exactly the arguments the model sent.
    const callsOf = (t: typeof first) => t!.messages.filter((m) => m.role === 'tool_call').map((m) => m.call);
    expect(callsOf(first)).toHaveLength(1);
    expect(callsOf(first)[0]).toMatchObject({ name: 'fx_rate', arguments: { pair: 'EURUSD' } });
    expect(toolRuns).toEqual([callsOf(first)[0]!.arguments, callsOf(second)[0]!.arguments]);

    // The tool's result went back to the model: its final answer quotes it.
    expect(first!.messages.find((m) => m.role === 'tool_result')).toMatchObject({
      content: '1.0842',
      isError: false,
    });
    expect(first).toMatchObject({ outcome: 'answered', endpointId: 'claude', degraded: false, faults: [] });
    expect(first!.answer.text).toContain('The fx_rate tool returned: "1.0842"');
    expect(first!.attempts).toBe(2);

    // Second turn: the primary's 429 is met once, and the fallback endpoint answers (tool round trip included).
    expect(second).toMatchObject({ outcome: 'fallback', endpointId: 'gpt', degraded: false });
    expect(second!.faults).toEqual([
      expect.objectContaining({
        kind: 'rate_limited',
        status: 429,
        endpointId: 'claude',
        retryAfterMs: 30_000,
      }),
    ]);
    expect(second!.answer.text).toMatch(/^\[gpt-4o-mini\] The fx_rate tool returned: "1\.0842"/);

    expect(lines).toEqual([
      'turn 1: answered via claude (claude-sonnet-4-6), 2 upstream calls',
      '  tool call: fx_rate({"pair":"EURUSD"})',
      '  tool result: 1.0842',
      `  answer: ${first!.answer.text}`,
      'turn 2: fallback via gpt (gpt-4o-mini), 3 upstream calls',
      '  fault: rate_limited (HTTP 429) on claude',
      '  tool call: fx_rate({"pair":"EURUSD"})',
      '  tool result: 1.0842',
      `  answer: ${second!.answer.text}`,
    ]);
  });
});
