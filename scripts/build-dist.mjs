#!/usr/bin/env node
// Builds the installable package into dist/: tsc emits JavaScript, declarations and source maps (sources
// inlined: the tarball ships no .ts), then esbuild bundles the visualizer's page script once, so an installed
// breakwater needs neither a TypeScript loader nor a bundler at run time. Run by `npm run build` and by
// `prepare` (so `npm ci` on a fresh clone builds it). `--if-stale` skips the build when dist/ was built from the
// sources as they are now (the consumer test uses it: `npm ci` has just built it).
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const DIST = join(ROOT, 'dist');
const STAMP = join(DIST, '.source-stamp');
const require = createRequire(import.meta.url);

/** Every input of the build with its size and mtime: a different stamp means a different build. */
function sourceStamp() {
  const hash = createHash('sha256');
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else {
        const s = statSync(path);
        hash.update(`${path}\0${s.size}\0${s.mtimeMs}\n`);
      }
    }
  };
  for (const d of ['src', 'machines', 'agents', 'migrations']) walk(join(ROOT, d));
  for (const f of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build-dist.mjs'])
    hash.update(readFileSync(join(ROOT, f)));
  return hash.digest('hex');
}

const stamp = sourceStamp();
if (process.argv.includes('--if-stale')) {
  let built = '';
  try {
    built = readFileSync(STAMP, 'utf8');
  } catch {
    // never built
  }
  if (built === stamp) process.exit(0);
}

rmSync(DIST, { recursive: true, force: true });
// tsc through its own entry file rather than npx: no lookup, and the same compiler the typecheck uses.
execFileSync(
  process.execPath,
  [require.resolve('typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json')],
  {
    cwd: ROOT,
    stdio: 'inherit',
  },
);

const pageIn = join(ROOT, 'src', 'viz', 'page');
const pageOut = join(DIST, 'src', 'viz', 'page');
mkdirSync(pageOut, { recursive: true });
const { build } = await import('esbuild');
await build({
  entryPoints: [join(pageIn, 'viz-page.ts')],
  outfile: join(pageOut, 'viz-page.js'),
  bundle: true,
  format: 'esm',
  platform: 'browser',
  target: 'es2022',
  legalComments: 'none',
  logLevel: 'warning',
});
for (const f of ['index.html', 'viz.css']) copyFileSync(join(pageIn, f), join(pageOut, f));
// The package's `bin`: npm links it as is, so it must be executable.
chmodSync(join(DIST, 'src', 'cli', 'main.js'), 0o755);
writeFileSync(STAMP, stamp);
