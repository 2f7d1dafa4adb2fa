import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { measureSizes, type Sized } from './size-check.ts';

/*
 * Files small and functions short (issue 33): no product file over 400 lines, no function over 100. The ones over
 * today are listed below with their size as measured; each may shrink (then lower or drop its entry: the test says
 * so) but never grow, and no new one may join. The list is meant to empty.
 */

const ROOT = join(import.meta.dirname, '..', '..');
const PRODUCT = ['src', 'machines', 'agents', 'migrations'];
const FILE_LINES = 400;
const FUNCTION_LINES = 100;

/** Files over the limit, with their lines when listed. */
const KNOWN_LONG_FILES: Readonly<Record<string, number>> = {
  // The agent's statechart: one machine in one file, as xstate's own machines are (its states read top to bottom).
  'machines/agent.machine.ts': 701,
};

/** Functions over the limit (`file#name`), with their lines when listed. */
const KNOWN_LONG_FUNCTIONS: Readonly<Record<string, number>> = {
  // The composition root: it builds the supervisor's ten parts in their order, one short call each, and names the
  // forward references they share; splitting it further would hide the order it exists to show.
  'src/runtime/create-supervisor.ts#createSupervisor': 133,
};

/** What is wrong with the sizes against the limit and the known list, one line each; empty when all is well. */
function sizeProblems(
  sized: readonly Sized[],
  limit: number,
  known: Readonly<Record<string, number>>,
): string[] {
  const problems: string[] = [];
  const seen = new Map(sized.map((s) => [s.id, s.lines]));
  for (const s of sized) {
    if (s.lines <= limit) continue;
    const listed = known[s.id];
    if (listed === undefined) problems.push(`${s.id}: ${s.lines} lines, over ${limit}: split it`);
    else if (s.lines > listed)
      problems.push(`${s.id}: grew from ${listed} to ${s.lines} lines: split it, do not grow it`);
  }
  for (const [id, lines] of Object.entries(known)) {
    const now = seen.get(id);
    if (now === undefined) problems.push(`${id}: listed but gone: drop its entry`);
    else if (now <= limit) problems.push(`${id}: now ${now} lines, within ${limit}: drop its entry`);
    else if (now < lines) problems.push(`${id}: shrank from ${lines} to ${now} lines: lower its entry`);
  }
  return problems;
}

describe('the sizes of the product', () => {
  const { files, functions } = measureSizes(ROOT, PRODUCT);

  it(`no file over ${FILE_LINES} lines but the listed ones, and none of those grew`, () => {
    expect(sizeProblems(files, FILE_LINES, KNOWN_LONG_FILES)).toEqual([]);
  });

  it(`no function over ${FUNCTION_LINES} lines but the listed ones, and none of those grew`, () => {
    expect(sizeProblems(functions, FUNCTION_LINES, KNOWN_LONG_FUNCTIONS)).toEqual([]);
  });
});

describe('the size check itself, on a fixture', () => {
  const fixture = join(import.meta.dirname, 'fixtures', 'sizes');
  const { files, functions } = measureSizes(fixture, ['src']);

  it('measures files and named functions, arrows included', () => {
    expect(files).toEqual([{ id: 'src/long-function.ts', lines: 10 }]);
    expect(functions).toEqual([
      { id: 'src/long-function.ts#eightLines', lines: 8 },
      { id: 'src/long-function.ts#short', lines: 1 },
    ]);
  });

  it('fails a function over the limit, one that grew, and an entry left behind', () => {
    expect(sizeProblems(functions, 5, {})).toEqual([
      'src/long-function.ts#eightLines: 8 lines, over 5: split it',
    ]);
    expect(sizeProblems(functions, 5, { 'src/long-function.ts#eightLines': 7 })).toEqual([
      'src/long-function.ts#eightLines: grew from 7 to 8 lines: split it, do not grow it',
    ]);
    expect(sizeProblems(functions, 10, { 'src/long-function.ts#eightLines': 8 })).toEqual([
      'src/long-function.ts#eightLines: now 8 lines, within 10: drop its entry',
    ]);
  });
});
