import type { IncomingMessage, ServerResponse } from 'node:http';
import { localHosts } from '../http/local-host-check.ts';
import { scrubValue } from '../redact/secret-scrubber.ts';
import { isRunNotFoundError } from '../store/store-errors.ts';
import { isSnapshotRestoreError } from '../store/snapshot-restore-error.ts';

/*
 * The visualizer server's HTTP vocabulary: an error that carries its status, JSON answers (scrubbed of
 * secrets), query integers, the page's content security policy and the check that refuses other origins.
 */

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

// Nothing the page needs comes from elsewhere: the policy makes the browser refuse any other origin.
/** Requests from elsewhere (another Origin, another site) are refused: see `startVizServer` (viz-server.ts). */
export function forbiddenBy(req: IncomingMessage, port: number): string | undefined {
  const origin = req.headers.origin;
  if (
    origin !== undefined &&
    !new Set(localHosts(port).map((h) => `http://${h}`)).has(String(origin).toLowerCase())
  )
    return 'requests from another origin are refused';
  if (req.headers['sec-fetch-site'] === 'cross-site') return 'requests from another site are refused';
  return undefined;
}

export const CSP =
  "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  const body = JSON.stringify(scrubValue(value));
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'x-content-type-options': 'nosniff',
  });
  res.end(body);
}

/** A request that failed: a JSON error with its status, or the connection cut once an answer has begun. */
export function sendError(res: ServerResponse, e: unknown): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const status =
    e instanceof HttpError
      ? e.status
      : isRunNotFoundError(e)
        ? 404
        : isSnapshotRestoreError(e)
          ? 409
          : e instanceof URIError
            ? 400
            : 500;
  sendJson(res, status, { error: e instanceof Error ? e.message : String(e) });
}

export function intParam(url: URL, name: string): number | undefined {
  const raw = url.searchParams.get(name);
  if (raw === null || raw === '') return undefined;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new HttpError(400, `${name} must be a non-negative integer`);
  return n;
}
