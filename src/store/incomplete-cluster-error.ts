/**
 * Present in a data folder while its cluster is being made (template unpacked or `initdb`), removed once PGlite has
 * started on it. A process killed during a first start leaves a folder PGlite cannot open; the marker says the folder
 * holds nothing but that half-made cluster (no run can have committed anything yet), so the next open starts over.
 */
export const PGLITE_INIT_MARKER = 'breakwater-initializing';

/**
 * A PGlite data folder holds files but not a complete cluster, and nothing says breakwater was making one there
 * (a folder made by an older version and interrupted, or a folder that is not a PGlite cluster at all). It is not
 * emptied automatically: it may hold someone's files.
 *
 * @example
 * ```ts
 * try { await openDatabase({ dataDir }); } catch (e) { if (isIncompleteClusterError(e)) console.error(e.message); }
 * ```
 */
export class IncompleteClusterError extends Error {
  readonly code = 'INCOMPLETE_PGLITE_CLUSTER' as const;
  readonly dataDir: string;
  constructor(dataDir: string, missing: readonly string[]) {
    super(
      `the folder ${dataDir} holds files but not a complete PGlite cluster (missing ${missing.join(', ')}): if it is a data folder whose first start was interrupted, nothing was committed in it — remove it and run again; otherwise choose an empty folder with --data-dir`,
    );
    this.name = 'IncompleteClusterError';
    this.dataDir = dataDir;
  }
}

/** Type guard for {@link IncompleteClusterError} (also matches by `code`). */
export function isIncompleteClusterError(e: unknown): e is IncompleteClusterError {
  return (
    typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'INCOMPLETE_PGLITE_CLUSTER'
  );
}
