import { randomBytes } from 'node:crypto';
import {
  closeSync,
  existsSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
// PGlite (a 10 MB WebAssembly build) loads on the first embedded open, not with the store: a PostgreSQL user, or a
// CLI command that opens no store, never pays for it.
import type { PGlite, PGliteOptions } from '@electric-sql/pglite';
import { IncompleteClusterError, PGLITE_INIT_MARKER } from './incomplete-cluster-error.ts';
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

/** Files that are ours, not the cluster's: the single-process lock (pglite-lock.ts) and the marker above. */
const OURS = new Set([PGLITE_LOCK_FILE, PGLITE_INIT_MARKER]);

/** True when `dir` holds nothing of a cluster yet (absent, or only our own files). */
function isFresh(dir: string): boolean {
  try {
    return readdirSync(dir).every((name) => OURS.has(name));
  } catch {
    return true;
  }
}

/** Removes whatever a cluster left in `dir`, keeping our own files (the lock this process holds). */
async function clearCluster(dir: string): Promise<void> {
  for (const name of await readdir(dir).catch(() => [] as string[]))
    if (!OURS.has(name)) await rm(join(dir, name), { recursive: true, force: true });
  await mkdir(dir, { recursive: true });
}

/** Writes the marker and flushes it, so it is on disk before the first file of the cluster is. */
function markInitializing(dir: string): void {
  const fd = openSync(join(dir, PGLITE_INIT_MARKER), 'w');
  try {
    writeSync(fd, `${process.pid}\n`);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** What a complete cluster always has; a folder with other files but not these is not a PGlite cluster we made. */
const CLUSTER_FILES = ['PG_VERSION', join('global', 'pg_control')];

/** A POSIX tar archive has `ustar` at offset 257 of its first header. */
function isTarball(bytes: Uint8Array): boolean {
  return bytes.length > 512 && Buffer.from(bytes.subarray(257, 262)).toString('latin1') === 'ustar';
}

/**
 * Creates a PGlite instance on `dataDir` (`undefined` = in memory). The caller holds the folder's lock.
 *
 * A folder's first start (nothing there yet, or a first start that was interrupted, see {@link PGLITE_INIT_MARKER})
 * makes the cluster under the marker, so a kill at any point leaves a folder the next open can start over in.
 * A fresh cluster starts from the cached template when there is one; otherwise it runs `initdb` and leaves a
 * template for the next one (written to a temporary name and renamed, so concurrent processes never read half a
 * file). A template that cannot be read or loaded is removed and `initdb` runs instead: the cache can only make an
 * open faster.
 *
 * @example
 * ```ts
 * const pglite = await createPGlite(undefined); // in memory, from the template when cached
 * ```
 */
export async function createPGlite(dataDir: string | undefined): Promise<PGlite> {
  if (dataDir === undefined) return createCluster(undefined);
  const interrupted = existsSync(join(dataDir, PGLITE_INIT_MARKER));
  if (!interrupted && !isFresh(dataDir)) {
    const missing = CLUSTER_FILES.filter((f) => !existsSync(join(dataDir, f)));
    if (missing.length > 0) throw new IncompleteClusterError(dataDir, missing);
    return startPGlite({ dataDir });
  }
  if (interrupted) await clearCluster(dataDir);
  else markInitializing(dataDir);
  const pglite = await createCluster(dataDir);
  await rm(join(dataDir, PGLITE_INIT_MARKER), { force: true });
  return pglite;
}

async function loadPGlite(): Promise<typeof PGlite> {
  return (await import('@electric-sql/pglite')).PGlite;
}

/**
 * PGlite's start parameters with a smaller buffer pool. The cluster's postgresql.conf (initdb's) asks for 128 MB of
 * shared buffers, and PGlite's WebAssembly Postgres initialises all of it on every start: about 0.5 s of CPU per
 * open of 0.9 s on a 2-core machine (a CLI command, a test database). 32 MB (4 096 pages) starts in about half
 * the time. Only one session ever uses the pool, and a page that is not in it is read back from the folder
 * (through the OS page cache) or from memory.
 */
function startParams(pglite: typeof PGlite): { startParams: string[] } {
  return { startParams: [...pglite.defaultStartParams, '-c', 'shared_buffers=32MB'] };
}

/** `PGlite.create` with {@link startParams}. */
async function startPGlite(options: Omit<PGliteOptions, 'startParams'>): Promise<PGlite> {
  const pglite = await loadPGlite();
  return pglite.create({ ...options, ...startParams(pglite) });
}

/** Makes a new cluster (in memory, or in an empty `dataDir`): from the cached template, else by `initdb`. */
async function createCluster(dataDir: string | undefined): Promise<PGlite> {
  const template = pgliteTemplatePath();
  // PGlite.create(undefined, options) ignores the options: always pass one options object.
  const where = dataDir !== undefined ? { dataDir } : {};
  if (!template) return startPGlite(where);
  let cached = await readTemplate(template);
  if (!cached) {
    // The template is always taken from an in-memory cluster: a folder's dump would carry the folder's own files
    // (our lock naming this process), and every cluster made from it would start with someone else's lock.
    const fresh = await startPGlite({});
    cached = await writeTemplate(fresh, template);
    if (dataDir === undefined) return fresh;
    await fresh.close();
  }
  if (cached) {
    try {
      if (dataDir === undefined) return await startPGlite({ loadDataDir: new TarballBytes(cached) });
      unpackInto(cached, dataDir);
      return await startPGlite({ dataDir });
    } catch {
      await rm(template, { force: true });
      if (dataDir !== undefined) await clearCluster(dataDir);
    }
  }
  return startPGlite(where);
}

/**
 * The template's bytes as the `loadDataDir` Blob PGlite reads (it only calls `arrayBuffer()` and looks at `type`).
 * A Blob made of them would copy the 40 MB once more, and Node 20 reads a Blob back in chunks and joins them:
 * about half a second of CPU on every in-memory cluster (every test database pays it). A folder is unpacked by
 * {@link unpackInto} instead.
 */
class TarballBytes extends Blob {
  readonly #bytes: Uint8Array<ArrayBuffer>;
  constructor(bytes: Uint8Array<ArrayBuffer>) {
    super([], { type: 'application/x-tar' });
    this.#bytes = bytes;
  }
  override get size(): number {
    return this.#bytes.byteLength;
  }
  override async arrayBuffer(): Promise<ArrayBuffer> {
    const b = this.#bytes;
    // A private copy when the bytes are a view into a larger buffer (never handed out beyond them).
    return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength
      ? b.buffer
      : b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
  }
}

/** The cached template's bytes; a damaged one, or one holding files of ours, is removed (`undefined`). */
async function readTemplate(template: string): Promise<Uint8Array<ArrayBuffer> | undefined> {
  const cached = await readFile(template).catch(() => undefined);
  if (!cached) return undefined;
  if (isTarball(cached) && !tarEntryNames(cached).some((name) => OURS.has(basename(name)))) return cached;
  await rm(template, { force: true });
  return undefined;
}

/** Dumps `pglite` to the template (a temporary name renamed, so no process reads half a file). */
async function writeTemplate(pglite: PGlite, template: string): Promise<Uint8Array<ArrayBuffer> | undefined> {
  const partial = `${template}.${randomBytes(4).toString('hex')}.partial`;
  try {
    const dump = new Uint8Array(await (await pglite.dumpDataDir('none')).arrayBuffer());
    await writeFile(partial, dump);
    await rename(partial, template);
    return dump;
  } catch {
    // A cache that cannot be written only means the next fresh cluster runs initdb too.
    await rm(partial, { force: true }).catch(() => {});
    return undefined;
  }
}

/** One entry of a POSIX tar archive: its name, its type flag (`5` a folder, `0` or empty a file) and its data. */
interface TarEntry {
  readonly name: string;
  readonly type: string;
  readonly data: Uint8Array;
}

/** A POSIX tar archive's entries (a 512-byte header each, its size in octal at 124, its type at 156, data padded to 512). */
function tarEntries(bytes: Uint8Array): TarEntry[] {
  const entries: TarEntry[] = [];
  const text = (from: number, length: number) =>
    Buffer.from(bytes.subarray(from, from + length))
      .toString('latin1')
      .replace(/\0.*$/s, '');
  for (let at = 0; at + 512 <= bytes.length; ) {
    const name = text(at, 100);
    if (name === '') break;
    const prefix = text(at + 345, 155);
    const size = Number.parseInt(text(at + 124, 12).trim() || '0', 8);
    const length = Number.isFinite(size) ? size : 0;
    entries.push({
      name: prefix ? `${prefix}/${name}` : name,
      type: text(at + 156, 1),
      data: bytes.subarray(at + 512, at + 512 + length),
    });
    at += 512 + Math.ceil(length / 512) * 512;
  }
  return entries;
}

/** The names of a POSIX tar archive's entries. */
function tarEntryNames(bytes: Uint8Array): string[] {
  return tarEntries(bytes).map((e) => e.name);
}

/**
 * Writes the template's files into `dir` (names like `/pg_wal/…`, relative to it) with Node's own file calls. PGlite's
 * `loadDataDir` writes the same 40 MB through its WebAssembly file system: a new folder's first start took 1.0-1.5 s
 * of CPU that way, 0.5-0.8 s this way (the start included). Synchronous, as PGlite's start that follows is. Only
 * folders and regular files, none outside `dir`: anything else is not a template this module wrote.
 */
function unpackInto(bytes: Uint8Array, dir: string): void {
  for (const e of tarEntries(bytes)) {
    if (e.name.split('/').includes('..')) throw new Error(`template entry ${e.name} is outside the folder`);
    const path = join(dir, e.name);
    if (e.type === '5') mkdirSync(path, { recursive: true });
    else if (e.type === '0' || e.type === '') {
      mkdirSync(dirname(path), { recursive: true });
      writeFileSync(path, e.data);
    } else throw new Error(`template entry ${e.name} is neither a folder nor a file`);
  }
}
