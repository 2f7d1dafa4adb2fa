import { beforeAll, describe, expect, it } from 'vitest';
import { EMULATOR_FLAVORS } from '../src/emulator/emulator-types.ts';
import {
  buildFaultMatrix,
  type FaultMatrix,
  formatFaultMatrix,
  MATRIX_KINDS,
} from './emulator-fault-matrix.ts';

// The README's emulator fault table is this matrix: these assertions keep the two honest.

describe('examples/emulator-fault-matrix.ts', () => {
  let matrix: FaultMatrix;
  const row = (kind: string) => matrix.find((r) => r.kind === kind)!.cells;
  const cloud = ['anthropic', 'openai', 'gemini', 'gemini-compat'] as const;

  beforeAll(async () => {
    matrix = await buildFaultMatrix();
  });

  it('has one row per non-streaming fault kind and one column per flavor', () => {
    expect(matrix.map((r) => r.kind)).toEqual(MATRIX_KINDS);
    const table = formatFaultMatrix(matrix).split('\n');
    expect(table).toHaveLength(MATRIX_KINDS.length + 2);
    expect(table[0]).toBe(`| emulator fault | ${EMULATOR_FLAVORS.join(' | ')} |`);
  });

  it('a 429 rate limit is rate_limited on every flavor, with the default 1000 ms where the wire carries a delay', () => {
    for (const flavor of EMULATOR_FLAVORS)
      expect(row('rate_limit')[flavor]).toMatchObject({ sent: '429', classified: 'rate_limited' });
    for (const flavor of ['anthropic', 'openai', 'gemini', 'vllm', 'ollama'] as const) {
      expect(row('rate_limit')[flavor].retryAfterMs).toBe(1000);
    }
  });

  it('spend caps and exhausted credit are credit_exhausted on the cloud providers, never rate_limited', () => {
    for (const flavor of cloud) {
      expect(row('spend_limit')[flavor].classified).toBe('credit_exhausted');
      expect(row('credit_exhausted')[flavor].classified).toBe('credit_exhausted');
    }
  });

  it('overload, server errors, connection faults, deadlines and bad keys land in their kinds everywhere', () => {
    const expected: Record<string, string> = {
      overloaded: 'overloaded',
      server_busy: 'overloaded',
      server_error_empty: 'server_error',
      gateway_timeout: 'server_error',
      html_502: 'server_error',
      connection_reset: 'network',
      connection_refused: 'network',
      hang_before_headers: 'timeout',
      stall_after_headers: 'timeout',
      bad_key: 'auth',
    };
    for (const [kind, classified] of Object.entries(expected)) {
      for (const flavor of EMULATOR_FLAVORS)
        expect(row(kind)[flavor].classified, `${kind} on ${flavor}`).toBe(classified);
    }
    expect(row('overloaded').anthropic.sent).toBe('529');
    expect(row('hang_before_headers').openai.sent).toBe('hang');
    expect(row('stall_after_headers').gemini.sent).toBe('stall');
  });
});
