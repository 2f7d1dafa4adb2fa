#!/usr/bin/env node
// Entry point of the `breakwater` command. The sources are TypeScript and `npm ci` is the whole install (no
// build step). Running them through tsx costs seconds per start (its loader sees every import, the SDKs'
// hundreds of files included), so the CLI is bundled once with esbuild (a dependency) into
// node_modules/.cache/breakwater/ and rebuilt whenever a source file changes; each module keeps its own
// import.meta.url, so files found next to the sources (package.json, the visualizer's page) resolve as
// before. When that is not possible (read-only tree, BREAKWATER_NO_BUNDLE=1), tsx runs the sources as
// they are.
//
// A few pure-JavaScript dependencies made of hundreds of small ESM files (kysely alone is over 400) go into the
// bundle too: Node resolving, reading and linking each of them cost every start about 0.2-0.4 s of CPU (the test
// suite starts the CLI hundreds of times). The other packages stay in node_modules, loaded as Node loads them.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const SOURCE_DIRS = ['src', 'machines', 'agents', 'migrations'];
const CACHE = join(ROOT, 'node_modules', '.cache', 'breakwater');
/** Packages bundled with the sources (see above); each is plain JavaScript with no files of its own to find. */
const INLINED_PACKAGES = new Set(['kysely', 'kysely-pglite-dialect', 'zod', 'xstate', 'yaml']);

/** Every source file with its size and mtime: the bundle is rebuilt when any of them changes. */
function sourceStamp() {
  const hash = createHash('sha256');
  const walk = (dir) => {
    let entries;
    try {
      entries = readdirSync(dir, { withFileTypes: true });
    } catch {
      return;
    }
    entries.sort((a, b) => a.name.localeCompare(b.name));
    for (const e of entries) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (/\.(?:ts|json|js|mjs)$/.test(e.name)) {
        const s = statSync(path);
        hash.update(`${path}\0${s.size}\0${s.mtimeMs}\n`);
      }
    }
  };
  for (const d of SOURCE_DIRS) walk(join(ROOT, d));
  hash.update(readFileSync(join(ROOT, 'package.json')));
  // This file's build options are part of the bundle too.
  hash.update(readFileSync(fileURLToPath(import.meta.url)));
  return hash.digest('hex').slice(0, 16);
}

async function cachedBundle() {
  if (process.env.BREAKWATER_NO_BUNDLE === '1') return undefined;
  const dir = join(CACHE, `cli-${sourceStamp()}`);
  const entry = join(dir, 'main.mjs');
  try {
    statSync(entry);
    return entry;
  } catch {
    // not built yet for these sources
  }
  const esbuild = await import('esbuild');
  const keepImportMetaUrl = {
    name: 'keep-import-meta-url',
    setup(build) {
      build.onLoad({ filter: /\.ts$/ }, (args) => {
        const text = readFileSync(args.path, 'utf8');
        const url = JSON.stringify(pathToFileURL(args.path).href);
        return { contents: text.replaceAll('import.meta.url', url), loader: 'ts' };
      });
    },
  };
  const externalPackages = {
    name: 'external-packages',
    setup(build) {
      build.onResolve({ filter: /^[^./]/ }, (args) => {
        const name = args.path.split('/', args.path.startsWith('@') ? 2 : 1).join('/');
        return INLINED_PACKAGES.has(name) ? undefined : { path: args.path, external: true };
      });
    },
  };
  // Written under a temporary name and renamed: processes starting together never load half a bundle.
  const partial = `${dir}.${process.pid}.partial`;
  const result = await esbuild.build({
    entryPoints: { main: join(ROOT, 'src', 'cli', 'main.ts') },
    bundle: true,
    // Split at dynamic imports, so what the sources load lazily (a command's module, a provider's SDK on an
    // endpoint's first call) stays lazy: one file would hoist every package's import to the start, and
    // `breakwater --version` would load all three provider SDKs and both database drivers.
    splitting: true,
    outdir: partial,
    outExtension: { '.js': '.mjs' },
    platform: 'node',
    format: 'esm',
    target: 'node20',
    // As tsx does: functions and classes keep their names even where bundling renames a symbol.
    keepNames: true,
    write: false,
    logLevel: 'silent',
    plugins: [keepImportMetaUrl, externalPackages],
    // An inlined package written as CommonJS (yaml's Node build) calls require(): give every chunk one.
    banner: {
      js: "import { createRequire as __bwCreateRequire } from 'node:module'; const require = __bwCreateRequire(import.meta.url);",
    },
  });
  mkdirSync(partial, { recursive: true });
  for (const out of result.outputFiles) writeFileSync(out.path, out.contents);
  try {
    renameSync(partial, dir);
  } catch {
    // Another process renamed its build there first: the same sources, so use it.
    rmSync(partial, { recursive: true, force: true });
  }
  for (const old of readdirSync(CACHE)) {
    if (old.startsWith('cli-') && join(CACHE, old) !== dir && !old.endsWith('.partial'))
      rmSync(join(CACHE, old), { recursive: true, force: true });
  }
  return entry;
}

let bundle;
try {
  bundle = await cachedBundle();
} catch {
  bundle = undefined;
}
if (bundle) {
  await import(pathToFileURL(bundle).href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
