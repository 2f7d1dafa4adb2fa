import type { Reporter, TestModule } from 'vitest/node';

/**
 * Prints one closing line `N passed, N failed, N skipped` so CI (and people) can read the outcome
 * from the last line of the run without parsing vitest's own summary. Skipped tests are never silent:
 * each is listed above that line with its file and full name (a skipped suite names why in its title).
 * A test that was meant to run but did not (its file's or suite's `beforeAll` failed) is a failure, not a
 * skip: it is counted and listed as one.
 */
export default class SummaryReporter implements Reporter {
  onTestRunEnd(testModules: ReadonlyArray<TestModule>): void {
    let passed = 0;
    let failed = 0;
    const skipped: string[] = [];
    const notRun: string[] = [];
    for (const mod of testModules) {
      const file = mod.moduleId.replace(`${process.cwd()}/`, '');
      let failedHere = 0;
      for (const test of mod.children.allTests()) {
        const state = test.result().state;
        if (state === 'passed') passed++;
        else if (state === 'failed') failedHere++;
        else if (test.options.mode === 'run' || test.options.mode === 'only') {
          failedHere++;
          notRun.push(`  not run (its suite failed): ${file} > ${test.fullName}`);
        } else skipped.push(`  skipped: ${file} > ${test.fullName}`);
      }
      // A file that failed with no failed test of its own (an import error, an afterAll that threw) counts once.
      if (mod.state() === 'failed' && failedHere === 0) failedHere = 1;
      failed += failedHere;
    }
    const list = [...notRun, ...skipped].map((line) => `\n${line}`).join('');
    process.stdout.write(`${list}\n${passed} passed, ${failed} failed, ${skipped.length} skipped\n`);
  }
}
