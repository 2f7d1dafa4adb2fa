import { describe, expect, it } from 'vitest';
import { checkOf, replaySeed } from '../support/seed-replay.ts';

describe('seed 000: morning peak under breakwater', () => {
  it('every seed-000 check passes', async () => {
    const report = await replaySeed('morning-peak', 'breakwater');
    for (const id of [
      'max-in-flight',
      'sonnet-calls-per-hour',
      'cooling-down-messages',
      'failure-rate',
      'analysis-success-rate',
      'placeholders',
    ]) {
      expect({ id, pass: checkOf(report, id).pass }).toEqual({ id, pass: true });
    }
    expect(checkOf(report, 'max-in-flight').value).toBeLessThanOrEqual(3);
    // telegram-outbox-flusher and its kind ran as plain code, never through an LLM.
    expect(report.turns.noAgent).toBeGreaterThan(0);
  }, 240_000);
});
