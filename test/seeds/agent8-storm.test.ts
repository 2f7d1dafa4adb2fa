import { describe, expect, it } from 'vitest';
import { checkOf, replaySeed } from '../support/seed-replay.ts';

describe('seed 003: agent8 storm under breakwater', () => {
  it('every turn is answered (normal, fallback or labelled degraded), none a placeholder, never more than 3 in flight', async () => {
    const report = await replaySeed('agent8-storm', 'breakwater');
    expect(report.turns.total).toBe(8 * 35 * 3);
    expect(report.turns.failed).toBe(0);
    expect(report.turns.placeholders).toBe(0);
    expect(report.turns.answered + report.turns.fallback + report.turns.degraded).toBe(report.turns.total);
    expect(checkOf(report, 'max-in-flight').value).toBeLessThanOrEqual(3);
    expect(report.allPassed).toBe(true);
  }, 240_000);
});
