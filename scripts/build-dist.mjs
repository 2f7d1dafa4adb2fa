#!/usr/bin/env node
// Builds the installable package into dist/: tsc emits JavaScript, declarations and source maps (sources
// inlined: the tarball ships no .ts), then esbuild bundles the visualizer's page script once, so an installed
// breakwater needs neither a TypeScript loader nor a bundler at run time. Run by `npm run build` and by
// `prepare` (so `npm ci` on a fresh clone builds it). `--if-stale` skips the build when dist/ was built from the
// sources as they are now (the consumer test uses it: `npm ci` has just built it).
//
// The build goes into a temporary folder beside dist/ (.dist-build-<pid>, same depth, so the source maps' relative
// paths are those of dist/) and is swapped in by rename once complete: a process importing dist/ while `prepare`
// runs (the first `npx breakwater` of a checkout) sees the old build or the new one, never a deleted or half-written
// one. Temporary folders left by a build that died are removed by the next.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
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
const BUILD = join(ROOT, `.dist-build-${process.pid}`);
const OLD = join(ROOT, `.dist-old-${process.pid}`);
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

/** Folders of builds whose process is gone (killed mid-build, a crash between the renames): removed. */
function removeStaleFolders() {
  for (const name of readdirSync(ROOT)) {
    const m = /^\.dist-(?:build|old)-(\d+)$/.exec(name);
    if (!m) continue;
    const pid = Number(m[1]);
    if (pid !== process.pid && isAlive(pid)) continue;
    rmSync(join(ROOT, name), { recursive: true, force: true });
  }
}

function isAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === 'EPERM';
  }
}

/**
 * Puts the finished build in dist/'s place. A rename cannot replace a folder that has files, so the old build is
 * renamed away first and the new one renamed in at once after (the two calls are the only moment dist/ is absent).
 * Another build finishing at the same moment may put its dist/ in between: then this one tries again.
 */
function swapIn() {
  for (let attempt = 0; ; attempt++) {
    try {
      renameSync(DIST, OLD);
    } catch (e) {
      if (e.code !== 'ENOENT') throw e;
    }
    try {
      renameSync(BUILD, DIST);
      break;
    } catch (e) {
      if ((e.code !== 'ENOTEMPTY' && e.code !== 'EEXIST') || attempt >= 5) throw e;
      rmSync(OLD, { recursive: true, force: true });
    }
  }
  rmSync(OLD, { recursive: true, force: true });
}

removeStaleFolders();
try {
  build();
  await bundlePage();
  writeFileSync(join(BUILD, '.source-stamp'), stamp);
  swapIn();
} finally {
  rmSync(BUILD, { recursive: true, force: true });
}

function build() {
  // tsc through its own entry file rather than npx: no lookup, and the same compiler the typecheck uses.
  execFileSync(
    process.execPath,
    [require.resolve('typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', BUILD],
    { cwd: ROOT, stdio: 'inherit' },
  );
}

async function bundlePage() {
  const pageIn = join(ROOT, 'src', 'viz', 'page');
  const pageOut = join(BUILD, 'src', 'viz', 'page');
  mkdirSync(pageOut, { recursive: true });
  const { build: esbuild } = await import('esbuild');
  await esbuild({
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
  chmodSync(join(BUILD, 'src', 'cli', 'main.js'), 0o755);
}
