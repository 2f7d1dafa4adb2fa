import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';
import FileOrderSequencer from './test/support/file-order-sequencer.ts';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'examples/**/*.test.ts'],
    // Tests talk to real local servers (emulator, PGlite, PostgreSQL): give them room on a 2-core machine.
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Bundles the test child files (test/**/*-child.ts) once, so spawned children run JavaScript, not tsx; and makes
    // the run's migrated template database, which each test file that touches PostgreSQL copies into its own.
    globalSetup: ['./test/support/build-test-children.ts', './test/support/database-global-setup.ts'],
    // Before each file: its own state (no DATABASE_URL inherited, its own Redis key prefix), and the guard that
    // fails any connection to the shared `test` database. See test/support/per-file-database.ts.
    setupFiles: ['./test/support/per-file-setup.ts'],
    // A failed test is a failure: no retry may turn a flaky verdict green (`npm run test:repeat` hunts flakes).
    retry: 0,
    pool: 'forks',
    // Two files per core: the suite waits far more than it computes (child processes, lease TTLs, scaled clocks,
    // servers answering). On a 2-core machine 4 files at once used ~410 s of CPU in ~230 s of wall time, where 2
    // at once took ~370-390 s of wall with the cores a quarter idle. At most 8, so a big machine does not open
    // dozens of PGlite instances and PostgreSQL connections at once.
    maxWorkers: Math.min(8, Math.max(2, 2 * availableParallelism())),
    // Each worker keeps its module cache from one test file to the next: importing the provider SDKs,
    // kysely and XState afresh for every file cost about a third of the suite's CPU. Test files leave
    // no state behind them (servers closed, env restored, clocks injected), which this relies on.
    isolate: false,
    // Files start in a planned order: long ones first, and never more PostgreSQL connections asked at once than
    // the server has, so no worker sits waiting (test/support/file-order.ts).
    sequence: { sequencer: FileOrderSequencer },
    reporters: ['default', './test/support/summary-reporter.ts'],
  },
});
