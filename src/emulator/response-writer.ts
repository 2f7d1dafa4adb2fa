import type { ServerResponse } from 'node:http';
import type { EmulatorCore } from './emulator-core.ts';
import type { EmulatorFlavor } from './emulator-types.ts';
import {
  anthropicRateLimitHeaders,
  openaiRateLimitHeaders,
  retryAfterHeaders,
} from './rate-limit-headers-out.ts';
import type { ErrorSpec, WireContext, WireModule } from './wire-module.ts';

/** The per-call rendering context: a fresh request id in the flavor's style and seeded ids. */
export function wireContext(core: EmulatorCore, flavor: EmulatorFlavor): WireContext {
  return {
    flavor,
    requestId: flavor === 'anthropic' ? core.id('req_011C', 20) : core.id('req_', 32).toLowerCase(),
    now: core.clock.now(),
    id: (prefix, length) => core.id(prefix, length),
    chunkChars: core.profile.streamChunkChars,
  };
}

/** The headers every response of this flavor carries: request id and rate-limit state. */
export function responseHeaders(
  core: EmulatorCore,
  flavor: EmulatorFlavor,
  ctx: WireContext,
  plainKey: string | undefined,
  model: string,
): Record<string, string> {
  if (flavor !== 'anthropic' && flavor !== 'openai') return {};
  const snap = core.quotas.snapshot(
    `${core.identity(plainKey)}\u0000${model}`,
    core.limitsFor(plainKey, model),
    core.time.now(),
  );
  const toReal = (ms: number) => core.time.toReal(ms);
  if (flavor === 'anthropic') {
    // Instants on the wire are wall-clock, as a real provider's: a client on a scenario clock must not
    // be able to read them right by accident. The duration to them is in clock ms, like retry-after.
    return { 'request-id': ctx.requestId, ...anthropicRateLimitHeaders(snap, toReal, core.wallNow()) };
  }
  return { 'x-request-id': ctx.requestId, ...openaiRateLimitHeaders(snap, toReal) };
}

/** Writes the provider's error; returns the status. `retryAfterMs` (real) adds retry-after headers. */
export function sendError(
  core: EmulatorCore,
  wire: WireModule,
  ctx: WireContext,
  res: ServerResponse,
  spec: ErrorSpec,
  plainKey: string | undefined,
  model: string,
  retryAfterMs?: number,
  extra: Record<string, string> = {},
): number {
  const out = wire.error(spec, ctx);
  // Gemini puts the delay in the body only (RetryInfo); the others use headers.
  const retry =
    retryAfterMs !== undefined && ctx.flavor !== 'gemini' && ctx.flavor !== 'gemini-compat'
      ? retryAfterHeaders(retryAfterMs)
      : {};
  res.writeHead(out.status, {
    ...responseHeaders(core, ctx.flavor, ctx, plainKey, model),
    ...retry,
    ...extra,
    'content-type': out.contentType,
  });
  res.end(out.body);
  return out.status;
}

/** Answers an unknown path in the flavor's format. */
export function sendNotFound(
  core: EmulatorCore,
  flavor: EmulatorFlavor,
  res: ServerResponse,
  method: string,
  path: string,
): void {
  const ctx = wireContext(core, flavor);
  const out = core.wires[flavor].error(
    { kind: 'not_found', model: 'unknown', message: `Not found: ${method} ${path}` },
    ctx,
  );
  res.writeHead(out.status, { 'content-type': out.contentType });
  res.end(out.body);
}
