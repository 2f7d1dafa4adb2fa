import type { IncomingMessage, ServerResponse } from 'node:http';
import { checkLocalHost } from '../http/local-host-check.ts';
import type { LiveStreams } from './live-streams.ts';
import { pageAsset } from './page-assets.ts';
import { answerApi, liveSourceOf, type VizApiSources } from './viz-api.ts';
import { CSP, forbiddenBy, HttpError, sendJson } from './viz-http.ts';

/** What a request is answered with: the server's port (for the Host and Origin checks), the APIs' sources, the live streams. */
export interface VizRouteContext {
  readonly port: number;
  readonly sources: VizApiSources;
  readonly streams: LiveStreams;
}

/**
 * Answers one request: refused unless it comes from this origin, then the live stream (`/api/live`), a JSON
 * API (`/api/…`) or a page asset. A failure is thrown for the caller to answer (`sendError`).
 */
export async function handleRequest(
  req: IncomingMessage,
  res: ServerResponse,
  { port, sources, streams }: VizRouteContext,
): Promise<void> {
  // DNS rebinding: a page of another site can reach 127.0.0.1 under its own name; it must get nothing.
  const refused = checkLocalHost(req, port);
  if (refused) throw new HttpError(refused.status, refused.message);
  const forbidden = forbiddenBy(req, port);
  if (forbidden) throw new HttpError(403, `${forbidden}; open http://127.0.0.1:${port}/`);
  const url = new URL(req.url ?? '/', 'http://127.0.0.1');
  if (req.method !== 'GET' && req.method !== 'HEAD') {
    res.writeHead(405, { allow: 'GET, HEAD' }).end();
    return;
  }
  if (url.pathname === '/api/live') return streams.serve(req, res, liveSourceOf(sources));
  if (url.pathname.startsWith('/api/')) {
    const parts = url.pathname
      .slice('/api/'.length)
      .split('/')
      .filter((p) => p !== '')
      .map((p) => decodeURIComponent(p));
    const aborted = new AbortController();
    res.once('close', () => aborted.abort());
    return sendJson(res, 200, await answerApi(sources, url, parts, aborted.signal));
  }
  const asset = await pageAsset(url.pathname);
  if (!asset) throw new HttpError(404, `nothing at ${url.pathname}`);
  res.writeHead(200, {
    'content-type': asset.contentType,
    'cache-control': 'no-store',
    'content-security-policy': CSP,
    'x-content-type-options': 'nosniff',
  });
  res.end(req.method === 'HEAD' ? undefined : asset.body);
}
