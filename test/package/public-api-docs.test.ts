import { join } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

/*
 * The public API as its declarations say it: every export of the root and of the subpaths a program embeds with
 * (`breakwater/emulator`, `/testing`, `/ai-sdk`) has TSDoc with an `@example`, and the root stays small enough to
 * read in one screen. Read with the TypeScript compiler from the sources the build emits from.
 */

const SRC = join(import.meta.dirname, '..', '..', 'src');
const ENTRIES = {
  breakwater: join(SRC, 'index.ts'),
  'breakwater/emulator': join(SRC, 'entries', 'emulator-entry.ts'),
  'breakwater/testing': join(SRC, 'entries', 'testing-entry.ts'),
  'breakwater/ai-sdk': join(SRC, 'ai-sdk', 'index.ts'),
  'breakwater/coordination': join(SRC, 'entries', 'coordination-entry.ts'),
};

const program = ts.createProgram(Object.values(ENTRIES), {
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  allowImportingTsExtensions: true,
  noEmit: true,
  strict: true,
  skipLibCheck: true,
});
const checker = program.getTypeChecker();

function exportsOf(file: string): { name: string; hasExample: boolean }[] {
  const module = checker.getSymbolAtLocation(program.getSourceFile(file)!)!;
  return checker.getExportsOfModule(module).map((exported) => {
    const symbol = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    const hasExample = (symbol.declarations ?? []).some((d) =>
      ts.getJSDocTags(d).some((t) => t.tagName.text === 'example'),
    );
    return { name: exported.name, hasExample };
  });
}

describe('the public API', () => {
  it.each(Object.entries(ENTRIES))('every export of %s has TSDoc with an @example', (_, file) => {
    const exports = exportsOf(file);
    expect(exports.length).toBeGreaterThan(0);
    expect(exports.filter((e) => !e.hasExample).map((e) => e.name)).toEqual([]);
  });

  it('the root is the embedding API only: about fifty names, no emulator, store, viz or machines', () => {
    // 52: the streaming API (TurnStream and its StreamEvent) joined the fifty.
    const names = exportsOf(ENTRIES.breakwater).map((e) => e.name);
    expect(names.length).toBeLessThanOrEqual(52);
    expect(names).toEqual(
      expect.arrayContaining(['createSupervisor', 'defineAgent', 'defineTool', 'defineConfig']),
    );
    for (const name of ['startEmulator', 'openDatabase', 'startVizServer', 'agentMachine', 'runScenario'])
      expect(names).not.toContain(name);
  });
});
