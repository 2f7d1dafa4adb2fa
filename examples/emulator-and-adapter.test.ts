import { describe, expect, it } from 'vitest';
import { main } from './emulator-and-adapter.ts';

describe('examples/emulator-and-adapter.ts', () => {
  it('prints the classified 429, then the answer of the retried call', async () => {
    const lines: string[] = [];
    const outcome = await main({ print: (line) => lines.push(line) });

    expect(outcome.fault).toMatchObject({
      kind: 'rate_limited',
      status: 429,
      retryAfterMs: 300,
      code: 'rate_limit_error',
      endpointId: 'claude-primary',
    });
    expect(outcome.result.endpoint.id).toBe('claude-primary');
    expect(outcome.result.text.length).toBeGreaterThan(0);
    expect(outcome.byStatus).toEqual({ '200': 1, '429': 1 });

    expect(lines[0]).toBe('fault: rate_limited (HTTP 429), retry after 300 ms, code rate_limit_error');
    expect(lines[1]).toMatch(/^answer from claude-primary \(claude-sonnet-4-6\): \S/);
    expect(lines[2]).toMatch(/^usage: [1-9]\d* input \+ [1-9]\d* output tokens$/);
    expect(lines[3]).toMatch(/^requests left this minute: \d+ of \d+$/);
    expect(lines[4]).toBe('emulator saw: {"200":1,"429":1}');
  });
});
