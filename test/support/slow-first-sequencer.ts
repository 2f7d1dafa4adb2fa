import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * The suite's slowest files, slowest first (seconds on a quiet 2-core machine, from a timed run). They start
 * first so that none of them is left running alone at the end while the other worker has nothing to do: on a
 * clean clone vitest has no durations cached and would order files by size, which put an 80-second file last.
 * A file missing here is simply ordered after these; a name here with no file is ignored.
 */
const SLOW_FIRST: readonly string[] = [
  'test/package/consumer-install.test.ts',
  'test/workers/morning-peak-workers.test.ts',
  'test/workers/workers-parity.test.ts',
  'test/workers/cli-workers.test.ts',
  'test/workers/workers-kill-quality.test.ts',
  'test/workers/workers-run-options.test.ts',
  'test/rounds/crash-resume-pglite.test.ts',
  'test/coordination/multi-process.test.ts',
  'test/viz/viz-storm.test.ts',
  'test/cli/cli-secrets.test.ts',
  'test/store/pglite-template.test.ts',
  'test/scenarios/scenario-bounds.test.ts',
  'test/viz/viz-slow-clients.test.ts',
  'test/byok/byok-memory-leak.test.ts',
  'test/crash/crash-suite.test.ts',
  'test/cli/cli-refused-at-load.test.ts',
  'test/workers/workers-db-terminate.test.ts',
  'test/workers/workers-resume.test.ts',
  'test/store/pglite-first-start.test.ts',
  'test/byok/byok-cli.test.ts',
  'test/byok/byok-canary.test.ts',
  'test/byok/leak-detectors.test.ts',
  'test/report/report-cli.test.ts',
  'test/rounds/crash-resume.test.ts',
  'test/rounds/crash-health.test.ts',
  'test/byok/byok-run-canary.test.ts',
  'test/observability/otlp-export.test.ts',
  'test/cli/cli-database-loss.test.ts',
  'test/viz/viz-command.test.ts',
  'test/seeds/agent8-storm.test.ts',
  'test/cli/cli-migrate.test.ts',
  'test/observability/metrics.test.ts',
  'test/workers/workers-kill.test.ts',
];

/** Known slow files first (in the order above), then the rest as vitest orders them. */
export default class SlowFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const rest = await super.sort(files);
    const rank = (spec: TestSpecification): number => {
      const i = SLOW_FIRST.indexOf(relative(spec.project.config.root, spec.moduleId));
      return i < 0 ? SLOW_FIRST.length : i;
    };
    // Array.prototype.sort is stable: files not listed keep vitest's order among themselves.
    return rest.sort((a, b) => rank(a) - rank(b));
  }
}
