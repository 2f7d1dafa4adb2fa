import type { CoordinationOptions } from '../../coordination/coordination-options.ts';
import { resolveCoordination } from '../../coordination/coordination-options.ts';
import { createCoordinationBackend } from '../../coordination/create-coordination.ts';
import { redactUrl } from '../../redact/secret-scrubber.ts';

/**
 * Where a run spread over workers keeps its global tokens and endpoint health, as stored with the run. The URL is
 * stored without its secrets (the password in the user part, `?password=` and other key-like parameters): a
 * worker that needs them brings them with `--coordination-url` (or env `BREAKWATER_COORDINATION_URL`).
 */
export interface StoredWorkerCoordination {
  readonly backend: 'postgres' | 'redis';
  /** The backend's URL without secrets. */
  readonly url: string;
  /** True when the URL given at the start carried a secret that was not stored. */
  readonly secret: boolean;
  /** Redis only: prefix of every key and channel. Default `breakwater:`. */
  readonly keyPrefix?: string;
}

/** A worker cannot coordinate on its run's backend (its flag names another, a secret is missing, it is unreachable). */
export class WorkerCoordinationError extends Error {
  readonly code = 'WORKER_COORDINATION' as const;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'WorkerCoordinationError';
  }
}

/**
 * Type guard for {@link WorkerCoordinationError}.
 *
 * @example
 * ```ts
 * if (isWorkerCoordinationError(e)) console.error(e.message);
 * ```
 */
export function isWorkerCoordinationError(e: unknown): e is WorkerCoordinationError {
  return typeof e === 'object' && e !== null && (e as { code?: unknown }).code === 'WORKER_COORDINATION';
}

/** The environment variable a worker reads its coordination URL from when `--coordination-url` is not given. */
export const COORDINATION_URL_ENV = 'BREAKWATER_COORDINATION_URL';

const SECRET_PARAM = /pass|secret|token|key|auth/i;

/**
 * The backend a `--coordination-url` names, from its scheme (`redis://`, `rediss://` → Redis, else PostgreSQL).
 *
 * @example
 * ```ts
 * coordinationBackendOf('redis://127.0.0.1:6379'); // 'redis'
 * ```
 */
export function coordinationBackendOf(url: string): 'postgres' | 'redis' {
  return /^rediss?:/i.test(url.trim()) ? 'redis' : 'postgres';
}

/**
 * What is stored with a run for a coordination URL: the URL without its secrets, and whether it had any.
 *
 * @example
 * ```ts
 * storeWorkerCoordination('redis://:pw@127.0.0.1:6379/2', 'app:');
 * // { backend: 'redis', url: 'redis://127.0.0.1:6379/2', secret: true, keyPrefix: 'app:' }
 * ```
 */
export function storeWorkerCoordination(url: string, keyPrefix?: string): StoredWorkerCoordination {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw new WorkerCoordinationError(
      'the coordination URL does not parse as a URL; give postgres://… or redis://… (the URL is not shown)',
    );
  }
  let secret = u.password !== '';
  u.password = '';
  u.hash = '';
  for (const name of [...new Set(u.searchParams.keys())])
    if (SECRET_PARAM.test(name)) {
      secret = true;
      u.searchParams.delete(name);
    }
  const backend = coordinationBackendOf(url);
  return {
    backend,
    url: u.toString(),
    secret,
    ...(backend === 'redis' && keyPrefix !== undefined ? { keyPrefix } : {}),
  };
}

/** The server a URL names: backend, host, port (default filled in) and database, whatever the credentials. */
function serverOf(url: string): string {
  const u = new URL(url);
  const backend = coordinationBackendOf(url);
  const port = u.port || (backend === 'redis' ? '6379' : '5432');
  const path = backend === 'redis' ? `/${Number(u.pathname.slice(1) || '0')}` : u.pathname || '/';
  const host = u.hostname.toLowerCase() || u.searchParams.get('host') || 'localhost';
  return `${backend}://${host}:${port}${path}`;
}

/** Where a worker of a run coordinates: the URL it connects with and the options of its supervisors. */
export interface WorkerCoordinationPlan {
  /** The coordination options, URL with its secrets (never logged: messages use `location`). */
  readonly options: CoordinationOptions;
  /** The backend and URL fit for a message. */
  readonly location: string;
}

/**
 * Decides where a worker coordinates for a run. The run decides the server (every worker of a run must share one
 * quota); a worker's own `--coordination-url` may only bring the credentials for that same server (same backend,
 * host, port and database): naming another server is refused, so two workers of one run never split its quota.
 * A run that stored no coordination coordinates on its own store, the worker's `databaseUrl`.
 *
 * @throws {WorkerCoordinationError} when the flag names another server, or a secret the run needs is missing
 * @example
 * ```ts
 * const plan = planWorkerCoordination({ runId, stored, databaseUrl, override: process.env.BREAKWATER_COORDINATION_URL });
 * ```
 */
export function planWorkerCoordination(input: {
  readonly runId: string;
  readonly stored: StoredWorkerCoordination | undefined;
  readonly databaseUrl: string;
  readonly override?: string | undefined;
}): WorkerCoordinationPlan {
  const { runId, stored, databaseUrl, override } = input;
  const runServer = stored?.url ?? databaseUrl;
  const where = `${stored?.backend === 'redis' ? 'Redis' : 'PostgreSQL'} at ${redactUrl(runServer)}`;
  let url: string;
  if (override !== undefined) {
    let same: boolean;
    try {
      same = serverOf(override) === serverOf(runServer);
    } catch {
      throw new WorkerCoordinationError(
        '--coordination-url does not parse as a URL; give postgres://… or redis://… (the URL is not shown)',
      );
    }
    if (!same)
      throw new WorkerCoordinationError(
        `--coordination-url names ${redactUrl(override)} but run ${runId} coordinates on ${where}; every worker of a run shares its quota there: drop the flag, or give that server's URL`,
      );
    url = override;
  } else if (!stored) {
    url = databaseUrl;
  } else if (stored.secret && serverOf(stored.url) === serverOf(databaseUrl)) {
    url = databaseUrl;
  } else if (stored.secret) {
    throw new WorkerCoordinationError(
      `run ${runId} coordinates on ${where}, whose password is not stored with the run; give the URL with it in --coordination-url or env ${COORDINATION_URL_ENV}`,
    );
  } else {
    url = stored.url;
  }
  const backend = stored?.backend ?? 'postgres';
  return {
    options: {
      backend,
      url,
      ...(backend === 'redis' && stored?.keyPrefix !== undefined ? { keyPrefix: stored.keyPrefix } : {}),
    },
    location: where,
  };
}

/**
 * Reaches a coordination backend once (then closes it), so an unreachable or misnamed one is one line naming
 * where it came from (`flag`) before any work is taken, never a password.
 *
 * @throws {WorkerCoordinationError} on a bad URL or an unreachable backend
 * @example
 * ```ts
 * await probeCoordination({ backend: 'redis', url }, '--coordination-url');
 * ```
 */
export async function probeCoordination(
  options: CoordinationOptions,
  flag: string,
  timeoutMs = 15_000,
): Promise<void> {
  const clean = (e: unknown) =>
    (e instanceof Error ? e.message : String(e))
      .replace(/^.*coordination\.url:? /, '')
      .replace(/; not sending \(fail closed\)$/, '');
  let resolved: ReturnType<typeof resolveCoordination>;
  try {
    resolved = resolveCoordination(options, 'probe');
  } catch (e) {
    throw new WorkerCoordinationError(`${flag}: ${clean(e)}`);
  }
  if (!resolved) return;
  const probe = createCoordinationBackend(resolved);
  try {
    await probe.connect(AbortSignal.timeout(timeoutMs));
  } catch (e) {
    // The backend's error is the cause: a worker tells a connection cut (tried again) from a refusal by it.
    throw new WorkerCoordinationError(`${flag}: ${clean(e)}`, { cause: e });
  } finally {
    await probe.close();
  }
}
