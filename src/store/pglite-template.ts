import { randomBytes } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PGlite } from '@electric-sql/pglite';
import { PGLITE_LOCK_FILE } from './pglite-lock.ts';

/**
 * A fresh PGlite cluster costs an `initdb` (3 s on an idle 2-core machine, over 10 s on a loaded one),
 * and every new store, every test database and every `breakwater run` in a new folder pays it. The
 * result of `initdb` is always the same for one PGlite version, so it is taken once (`dumpDataDir`),
 * cached as a tarball, and later fresh clusters start from it (`loadDataDir`) in about a second.
 * Migrations still run on every open as before: the template is the empty cluster, never a schema.
 */

/**
 * Env variable naming the template file to use instead of the default, or `off` to always run `initdb`.
 *
 * @example
 * ```ts
 * process.env[PGLITE_TEMPLATE_ENV] = 'off';
 * ```
 */
export const PGLITE_TEMPLATE_ENV = 'BREAKWATER_PGLITE_TEMPLATE';

function pgliteVersion(): string {
  try {
    // The package does not export its package.json: walk up from its entry point.
    let dir = dirname(fileURLToPath(import.meta.resolve('@electric-sql/pglite')));
    for (let i = 0; i < 4; i++, dir = dirname(dir)) {
      const file = join(dir, 'package.json');
      if (!existsSync(file)) continue;
      const pkg = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === '@electric-sql/pglite' && pkg.version) return pkg.version;
    }
  } catch {
    // fall through: an unknown version gets its own file name
  }
  return 'unknown';
}

/**
 * Where the template of an empty cluster lives: env {@link PGLITE_TEMPLATE_ENV}, else
 * `<os temp dir>/breakwater-pglite-<version>.tar`. `undefined` when the env variable says `off`.
 *
 * @example
 * ```ts
 * pgliteTemplatePath(); // '/tmp/breakwater-pglite-0.4.6.tar'
 * ```
 */
export function pgliteTemplatePath(
  env: Readonly<Record<string, string | undefined>> = process.env,
): string | undefined {
  const configured = env[PGLITE_TEMPLATE_ENV]?.trim();
  if (configured === 'off') return undefined;
  if (configured) return configured;
  const uid = typeof process.getuid === 'function' ? `-${process.getuid()}` : '';
  return join(tmpdir(), `breakwater-pglite-${pgliteVersion()}${uid}.tar`);
}

/** True when `dir` holds nothing yet (absent or empty): only then may a template be unpacked there. */
function isFresh(dir: string | undefined): boolean {
  if (dir === undefined) return true;
  try {
    // The single-process lock (pglite-lock.ts) is ours, not the cluster's.
    return readdirSync(dir).every((name) => name === PGLITE_LOCK_FILE);
  } catch {
    return true;
  }
}

/** A POSIX tar archive has `ustar` at offset 257 of its first header. */
function isTarball(bytes: Uint8Array): boolean {
  return bytes.length > 512 && Buffer.from(bytes.subarray(257, 262)).toString('latin1') === 'ustar';
}

/**
 * Creates a PGlite instance on `dataDir` (`undefined` = in memory). A fresh cluster starts from the cached
 * template when there is one; otherwise it runs `initdb` and leaves a template for the next one (written
 * to a temporary name and renamed, so concurrent processes never read half a file). A template that
 * cannot be read or loaded is removed and `initdb` runs instead: the cache can only make an open faster.
 *
 * @example
 * ```ts
 * const pglite = await createPGlite(undefined); // in memory, from the template when cached
 * ```
 */
export async function createPGlite(dataDir: string | undefined): Promise<PGlite> {
  const template = pgliteTemplatePath();
  // PGlite.create(undefined, options) ignores the options: always pass one options object.
  const where = dataDir !== undefined ? { dataDir } : {};
  if (!template || !isFresh(dataDir)) return PGlite.create(where);
  const cached = await readFile(template).catch(() => undefined);
  if (cached && !isTarball(cached)) await rm(template, { force: true });
  else if (cached) {
    try {
      return await PGlite.create({ ...where, loadDataDir: new Blob([cached]) });
    } catch {
      await rm(template, { force: true });
      if (dataDir !== undefined) {
        // Whatever the failed load left, except the lock this process holds on the folder.
        for (const name of await readdir(dataDir).catch(() => [] as string[]))
          if (name !== PGLITE_LOCK_FILE) await rm(join(dataDir, name), { recursive: true, force: true });
        await mkdir(dataDir, { recursive: true });
      }
    }
  }
  const pglite = await PGlite.create(where);
  const partial = `${template}.${randomBytes(4).toString('hex')}.partial`;
  try {
    const dump = await pglite.dumpDataDir('none');
    await writeFile(partial, new Uint8Array(await dump.arrayBuffer()));
    await rename(partial, template);
  } catch {
    // A cache that cannot be written only means the next fresh cluster runs initdb too.
    await rm(partial, { force: true }).catch(() => {});
  }
  return pglite;
}
