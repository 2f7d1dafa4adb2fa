import { describe, expect, it } from 'vitest';
import { checkOf, replaySeed } from '../support/seed-replay.ts';

describe('seed 000: morning peak under the status-quo worker', () => {
  it('the seed’s failures appear: more than 3 in flight, and more checks fail', async () => {
    const report = await replaySeed('morning-peak', 'status-quo');
    expect(report.policy).toBe('status-quo');
    expect(checkOf(report, 'max-in-flight').pass).toBe(false);
    expect(report.checks.some((c) => c.pass === false && c.id !== 'max-in-flight')).toBe(true);
    // The old worker sent every cron through the LLM.
    expect(report.turns.noAgent).toBe(0);
  }, 240_000);
});
