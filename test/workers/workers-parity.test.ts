import { describe, it } from 'vitest';
import { perFileDatabase } from '../support/coordination-env.ts';
import { cliReport, expectSameVerdict } from './parity-verdict.ts';

// This file's own PostgreSQL database (test/support/per-file-database.ts).
// At most 36 PostgreSQL connections at once: three workers, their parent and the test at their peak (measured peak, with room).
perFileDatabase({ connections: 36 });

/*
 * One process and `--workers 3` judge agent8-storm alike (test/workers/parity-verdict.ts says how): the real CLI runs
 * the shipped scenario both ways on one PostgreSQL store (the workers' tokens and endpoint health on it), the workers
 * on its scaled clock (about a minute), one process on a virtual clock. morning-peak's parity is judged on the
 * workers run test/workers/morning-peak-workers.test.ts makes (one run, compared several ways), in a file of its own
 * so the two minute-long runs go side by side in `npm test`.
 */

describe('one process and --workers 3 give the same verdict', () => {
  it('agent8-storm', async () => {
    const three = await cliReport('agent8-storm', { workers: 3 });
    const one = await cliReport('agent8-storm', { virtualTime: true });
    expectSameVerdict('agent8-storm', one.report, three.report, 'incident');
  }, 600_000);
});
