import { describe, expect, it } from 'vitest';
import { main } from './ai-sdk-generate.ts';

describe('examples/ai-sdk-generate.ts', () => {
  it('generateText (with a tool) and streamText end on the backup while the primary answers 429', async () => {
    const lines: string[] = [];
    const { generated, streamed, toolRuns } = await main({ print: (line) => lines.push(line) });
    expect(toolRuns).toEqual(['EURUSD']);
    const [ask, answer] = generated.steps;
    // Step 1 met the primary's 429 and fell back; by step 2 the primary is known to be cooling, so breakwater
    // goes straight to the backup without another 429.
    expect(ask).toMatchObject({ outcome: 'fallback', endpointId: 'gpt', degraded: false });
    expect(ask!.faults.map((f) => [f.kind, f.endpointId, f.status])).toEqual([
      ['rate_limited', 'claude', 429],
    ]);
    expect(answer).toMatchObject({ outcome: 'fallback', endpointId: 'gpt', faults: [] });
    expect(generated.text).toMatch(/^\[gpt-4o-mini\] The fx_rate tool returned: "1\.0842"/);
    expect(streamed.breakwater).toMatchObject({ outcome: 'fallback', endpointId: 'gpt' });
    expect(streamed.text).toContain('[gpt-4o-mini]');
    expect(lines[0]).toBe('generateText step 1: fallback via gpt; faults: rate_limited on claude');
    expect(lines[1]).toBe('generateText step 2: fallback via gpt; faults: none');
    expect(lines[3]).toBe('streamText: fallback via gpt');
  });
});
