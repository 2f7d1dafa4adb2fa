import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { TestProject } from 'vitest/node';

/*
 * vitest globalSetup: bundles every test child file (`test/**\/*-child.ts`, the helper processes tests spawn) with
 * esbuild once per run, so each spawned child is plain JavaScript. Under `node --import tsx` every child paid about
 * 0.6 s of CPU for tsx's loader seeing each import (the provider SDKs' hundreds of files included) even with a warm
 * transform cache, and more on a clean clone's cold one; the multi-process tests start dozens of children. The bundle
 * is made from the sources as they are at the start of the run (the same esbuild transform tsx applies, names and
 * import.meta.url kept as bin/breakwater.js does for the CLI), into a folder of this run that teardown removes.
 */

const ROOT = join(import.meta.dirname, '..', '..');

/** The test child files, relative to the repository root. */
function childFiles(dir = join(ROOT, 'test')): string[] {
  const found: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) found.push(...childFiles(path));
    else if (e.name.endsWith('-child.ts')) found.push(relative(ROOT, path));
  }
  return found.sort();
}

declare module 'vitest' {
  export interface ProvidedContext {
    /** The folder of this run's child bundles (see test/support/test-child.ts). */
    testChildrenDir: string;
  }
}

/** Bundles every child file into `outdir` (emptied first). */
async function buildChildren(outdir: string): Promise<void> {
  rmSync(outdir, { recursive: true, force: true });
  const esbuild = await import('esbuild');
  const keepImportMeta = {
    name: 'keep-import-meta',
    setup(build: import('esbuild').PluginBuild) {
      build.onLoad({ filter: /\.ts$/ }, (args) => {
        const text = readFileSync(args.path, 'utf8')
          .replaceAll('import.meta.url', JSON.stringify(pathToFileURL(args.path).href))
          .replaceAll('import.meta.dirname', JSON.stringify(join(args.path, '..')))
          .replaceAll('import.meta.filename', JSON.stringify(args.path));
        return { contents: text, loader: 'ts' as const };
      });
    },
  };
  await esbuild.build({
    // `test/coordination/coordination-worker-child.ts` → `<outdir>/test/coordination/coordination-worker-child.mjs`
    entryPoints: Object.fromEntries(childFiles().map((f) => [f.replace(/\.ts$/, ''), join(ROOT, f)])),
    bundle: true,
    // Shared sources in shared chunks, and what the sources load lazily stays lazy, as in the CLI's bundle.
    splitting: true,
    outdir,
    outExtension: { '.js': '.mjs' },
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    keepNames: true,
    logLevel: 'warning',
    plugins: [keepImportMeta],
  });
}

export default async function setup(project: TestProject): Promise<() => void> {
  const outdir = join(ROOT, 'node_modules', '.cache', 'breakwater-test-children', `run-${process.pid}`);
  await buildChildren(outdir);
  // In watch mode the sources change between runs: each rerun bundles them again.
  project.vitest.onTestsRerun(() => buildChildren(outdir));
  project.provide('testChildrenDir', outdir);
  return () => rmSync(outdir, { recursive: true, force: true });
}
