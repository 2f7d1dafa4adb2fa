import type { Reporter, TestModule } from 'vitest/node';

/**
 * Prints one closing line `N passed, N failed, N skipped` so CI (and people) can read the outcome
 * from the last line of the run without parsing vitest's own summary. Skipped tests are never silent:
 * each is listed above that line with its file and full name (a skipped suite names why in its title).
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    const skipped: string[] = [];
    for (const mod of testModules) {
      for (const test of mod.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failed++;
        else skipped.push(`  skipped: ${mod.moduleId.replace(`${process.cwd()}/`, '')} > ${test.fullName}`);
      }
      if (mod.state() === 'failed' && [...mod.children.allTests()].length === 0) failed++;
    }
    const list = skipped.length > 0 ? `\n${skipped.join('\n')}` : '';
    process.stdout.write(`${list}\n${passed} passed, ${failed} failed, ${skipped.length} skipped\n`);
  }
}
