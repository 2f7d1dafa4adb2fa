import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';

/** The lock file in a PGlite data folder while a process has it open. */
export const PGLITE_LOCK_FILE = 'breakwater.pid';

/**
 * Another live process has this PGlite data folder open. PGlite is single-process: a second process on the same
 * folder would corrupt it, so it is refused before PGlite touches anything.
 *
 * @example
 * ```ts
 * try { await openDatabase({ dataDir }); } catch (e) { if (isDataDirInUseError(e)) console.error(e.message); }
 * ```
 */
export class DataDirInUseError extends Error {
  readonly code = 'DATA_DIR_IN_USE' as const;
  readonly dataDir: string;
  readonly pid: number;
  constructor(dataDir: string, holder: LockHolder) {
    super(
      `the PGlite data folder ${dataDir} is in use by process ${holder.pid} (${holder.command || 'breakwater'}, since ${new Date(holder.since).toISOString()}); embedded PGlite serves one process at a time — wait for it to finish, or use --database-url (PostgreSQL) for concurrent access`,
    );
    this.name = 'DataDirInUseError';
    this.dataDir = dataDir;
    this.pid = holder.pid;
  }
}

/** Type guard for {@link DataDirInUseError} (also matches by `code`). */
export function isDataDirInUseError(e: unknown): e is DataDirInUseError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'DATA_DIR_IN_USE';
}

interface LockHolder {
  readonly pid: number;
  readonly host: string;
  readonly command: string;
  readonly since: number;
}

/** Folders this process holds, with how many opens each (one process may open a folder more than once). */
const held = new Map<string, number>();

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists but is someone else's.
    return (e as { code?: string }).code === 'EPERM';
  }
}

function readHolder(path: string): LockHolder | undefined {
  try {
    const parsed = JSON.parse(readFileSync(path, 'utf8')) as Partial<LockHolder>;
    return typeof parsed.pid === 'number'
      ? {
          pid: parsed.pid,
          host: String(parsed.host ?? ''),
          command: String(parsed.command ?? ''),
          since: Number(parsed.since ?? 0),
        }
      : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Takes the data folder for this process: an exclusively created lock file naming the pid. A lock left by a
 * process that died (SIGKILL leaves one) is taken over; a live holder on this host makes it throw.
 *
 * @returns the release function (removes the lock when this process's last open closes)
 * @throws {DataDirInUseError}
 */
export function lockDataDir(dir: string): () => void {
  const path = join(dir, PGLITE_LOCK_FILE);
  const mine = held.get(dir);
  if (mine === undefined) {
    for (let attempt = 0; ; attempt++) {
      try {
        const fd = openSync(path, 'wx');
        const holder: LockHolder = {
          pid: process.pid,
          host: hostname(),
          command: process.argv.slice(2, 4).join(' '),
          since: Date.now(),
        };
        writeSync(fd, JSON.stringify(holder));
        closeSync(fd);
        break;
      } catch (e) {
        if ((e as { code?: string }).code !== 'EEXIST' || attempt >= 3) throw e;
        const holder = readHolder(path);
        const live =
          holder !== undefined &&
          holder.pid !== process.pid &&
          holder.host === hostname() &&
          alive(holder.pid);
        if (live) throw new DataDirInUseError(dir, holder);
        // A dead holder (or a half-written file): its lock is stale. Remove it and try again.
        try {
          unlinkSync(path);
        } catch {}
      }
    }
  }
  held.set(dir, (mine ?? 0) + 1);
  let released = false;
  return () => {
    if (released) return;
    released = true;
    const left = (held.get(dir) ?? 1) - 1;
    if (left > 0) {
      held.set(dir, left);
      return;
    }
    held.delete(dir);
    if (readHolder(path)?.pid === process.pid) {
      try {
        unlinkSync(path);
      } catch {}
    }
  };
}
