import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  DEFAULT_FILE_CONNECTIONS,
  declaredConnections,
  type PlannedFile,
  planFileOrder,
} from './file-order.ts';

const file = (name: string, seconds: number, connections: number): PlannedFile => ({
  file: name,
  seconds,
  connections,
});

describe('the order test files start in', () => {
  it('never starts more connections at once than the budget while files that need none are left to start', () => {
    // The suite's shape: four worker files of 32-36 connections, two of 24, and many PGlite or plain files.
    const files = [
      file('parity', 54, 36),
      file('kill-quality', 45, 36),
      file('morning-peak', 150, 32),
      file('cli-workers', 16, 32),
      file('consumer-install', 180, 24),
      file('run-options', 53, 24),
      file('crash-resume-pglite', 55, 0),
      file('viz-storm', 44, 0),
      file('byok-memory-leak', 64, 0),
      file('viz-slow-clients', 28, 0),
      ...Array.from({ length: 30 }, (_, i) =>
        file(`small-${i}`, 2, i % 3 === 0 ? DEFAULT_FILE_CONNECTIONS : 0),
      ),
    ];
    const order = planFileOrder(files, 4, 89);
    const first = order.slice(0, 4);
    expect(first.reduce((sum, f) => sum + f.connections, 0)).toBeLessThanOrEqual(89);
    // The longest file still starts first, and the long files before the short ones.
    expect(order[0]?.file).toBe('consumer-install');
    expect(order.slice(0, 10).map((f) => f.file)).toContain('morning-peak');
  });

  it('is a permutation of its input, and the first files started together fit the budget when they can', () => {
    const arbFile = fc.record({
      seconds: fc.integer({ min: 1, max: 200 }),
      connections: fc.constantFrom(0, 0, 0, 8, 12, 24, 32, 36),
    });
    fc.assert(
      fc.property(
        fc.array(arbFile, { minLength: 1, maxLength: 60 }),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 40, max: 120 }),
        (raw, workers, budget) => {
          const files = raw.map((f, i) => file(`f${i}`, f.seconds, f.connections));
          const order = planFileOrder(files, workers, budget);
          expect(order.map((f) => f.file).sort()).toEqual(files.map((f) => f.file).sort());
          // Every file's share fits the budget alone, and enough need none: the first `workers` fit together.
          const free = files.filter((f) => f.connections === 0).length;
          if (files.every((f) => f.connections <= budget) && free >= workers) {
            const started = order.slice(0, workers);
            expect(started.reduce((sum, f) => sum + f.connections, 0)).toBeLessThanOrEqual(budget);
          }
        },
      ),
      { seed: 20261206, numRuns: 300 },
    );
  });

  it('reads the connections a file declares at its top', () => {
    expect(declaredConnections("perFileDatabase({ connections: 32 });\nit('x', () => {});")).toBe(32);
    expect(declaredConnections('shareOfConnections(30);')).toBe(30);
    expect(declaredConnections("import { perFileDatabase } from '../support/per-file-database.ts';")).toBe(
      DEFAULT_FILE_CONNECTIONS,
    );
    expect(declaredConnections("import { coordinationCases } from '../support/coordination-env.ts';")).toBe(
      DEFAULT_FILE_CONNECTIONS,
    );
    expect(declaredConnections("import { openPglite } from '../../src/store/pglite.ts';")).toBe(0);
  });
});
