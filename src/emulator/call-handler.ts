import type { IncomingMessage, ServerResponse } from 'node:http';
import { sleep } from '../clock/clock.ts';
import { maskSecret, scrubSecrets } from '../redact/secret-scrubber.ts';
import { generateAnswer } from './answer-generator.ts';
import { type EmulatorCore, keyFingerprint } from './emulator-core.ts';
import type {
  CallRecord,
  CallStatus,
  EmulatorFaultKind,
  EmulatorFlavor,
  FaultRule,
} from './emulator-types.ts';
import type { QuotaAdmission } from './quota-windows.ts';
import { outputTokenProblem } from './request-limits.ts';
import { responsesWire } from './responses-wire.ts';
import {
  anthropicRateLimitHeaders,
  openaiRateLimitHeaders,
  retryAfterHeaders,
} from './rate-limit-headers-out.ts';
import type { ErrorSpec, WireContext, WireModule } from './wire-module.ts';
import { type WireRequest, WireRequestError } from './wire-request.ts';

/** Recorded when the client went away before its answer (nginx/Ollama's "client closed request"). */
const CLIENT_CLOSED = 499;

/** Where a flavor's call endpoint lives, and what the URL says about model and streaming. */
export interface CallRoute {
  model?: string;
  stream?: boolean;
  /** The OpenAI Responses API rather than Chat Completions. */
  responses?: boolean;
}

/** Maps a method+path to a call route for this flavor, or undefined (→ provider 404). */
export function routeCall(flavor: EmulatorFlavor, method: string, pathname: string): CallRoute | undefined {
  if (method !== 'POST') return undefined;
  switch (flavor) {
    case 'anthropic':
      return pathname === '/v1/messages' ? {} : undefined;
    case 'openai':
      if (pathname === '/v1/responses') return { responses: true };
      return pathname === '/v1/chat/completions' ? {} : undefined;
    case 'vllm':
    case 'ollama':
      return pathname === '/v1/chat/completions' ? {} : undefined;
    case 'gemini-compat':
      return pathname === '/v1beta/openai/chat/completions' ? {} : undefined;
    case 'gemini': {
      const m = /^\/v1(?:beta|alpha)?\/models\/([^/:]+):(generateContent|streamGenerateContent)$/.exec(
        pathname,
      );
      return m ? { model: decodeURIComponent(m[1]!), stream: m[2] === 'streamGenerateContent' } : undefined;
    }
  }
}

/** The API key as each provider's SDK sends it. */
export function extractKey(flavor: EmulatorFlavor, req: IncomingMessage, url: URL): string | undefined {
  const bearer = /^Bearer\s+(.+)$/i.exec(String(req.headers.authorization ?? ''))?.[1]?.trim();
  if (flavor === 'anthropic') return (req.headers['x-api-key'] as string | undefined) ?? bearer;
  if (flavor === 'gemini')
    return (req.headers['x-goog-api-key'] as string | undefined) ?? url.searchParams.get('key') ?? undefined;
  return bearer;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** One call through the pipeline: faults → auth → credit → local queue → quota → latency → answer. */
export async function handleCall(
  core: EmulatorCore,
  flavor: EmulatorFlavor,
  route: CallRoute,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): Promise<void> {
  const wire = route.responses ? responsesWire : core.wires[flavor];
  const { seq, inFlight } = core.stats.begin();
  const plainKey = extractKey(flavor, req, url);
  const idem = req.headers['idempotency-key'];
  const retryCount = Number(req.headers['x-stainless-retry-count']);
  const record: CallRecord = {
    seq,
    flavor,
    key: core.identity(plainKey),
    model: route.model ?? 'unknown',
    status: 0,
    startedAt: core.clock.now(),
    endedAt: 0,
    inFlightAtStart: inFlight,
    ...(typeof idem === 'string' ? { idempotencyKey: idem } : {}),
    ...(Number.isInteger(retryCount) ? { sdkRetryCount: retryCount } : {}),
    inputTokens: 0,
    outputTokens: 0,
    stream: route.stream === true,
  };
  let finished = false;
  const finish = (status: CallStatus, fault?: EmulatorFaultKind) => {
    if (finished) return;
    finished = true;
    record.status = status;
    if (fault) record.fault = fault;
    record.endedAt = core.clock.now();
    core.stats.end(record);
    core.logger?.debug(
      { flavor, key: record.key, model: record.model, status, fault, seq },
      scrubSecrets(`emulator ${flavor} ${record.model} → ${status}`),
    );
  };
  // The client may go away at any point (its timeout, our close()): that ends holds and waits.
  const gone = new AbortController();
  res.on('close', () => {
    if (!res.writableFinished) gone.abort(new Error('client gone'));
  });
  const signal = AbortSignal.any([gone.signal, core.closing.signal]);

  const ctx: WireContext = {
    flavor,
    requestId: flavor === 'anthropic' ? core.id('req_011C', 20) : core.id('req_', 32).toLowerCase(),
    now: core.clock.now(),
    id: (prefix, length) => core.id(prefix, length),
  };

  let body: string;
  try {
    body = await readBody(req);
  } catch {
    return finish(CLIENT_CLOSED);
  }
  let call: WireRequest;
  try {
    let json: unknown;
    try {
      json = body ? JSON.parse(body) : undefined;
    } catch {
      throw new WireRequestError('The request body is not valid JSON.');
    }
    call = wire.parse(json, route);
  } catch (e) {
    const message = e instanceof WireRequestError ? e.message : 'invalid request';
    sendError(
      core,
      wire,
      ctx,
      res,
      { kind: 'bad_request', model: record.model, message },
      plainKey,
      record.model,
    );
    return finish(400);
  }
  record.model = call.model;
  record.stream = call.stream;
  record.inputTokens = call.inputTokens;

  const rule = core.faults.pick({
    flavor,
    keyIdentity: record.key,
    keyPlain: plainKey,
    keyFingerprint: plainKey ? keyFingerprint(plainKey) : 'none',
    model: call.model,
    stream: call.stream,
    at: core.time.now(),
  });
  if (rule && rule.kind !== 'stream_error') {
    const status = await applyFault(core, wire, ctx, rule, call, plainKey, req, res, signal);
    return finish(status, rule.kind);
  }

  const known = core.knownKey(plainKey);
  if (!known && !core.profile.acceptAnyKey) {
    const keyHint = plainKey ? maskSecret(plainKey) : undefined;
    const status = sendError(
      core,
      wire,
      ctx,
      res,
      { kind: 'bad_key', model: call.model, ...(keyHint ? { keyHint } : {}) },
      plainKey,
      call.model,
    );
    return finish(status);
  }
  const problem = outputTokenProblem(flavor, call);
  if (problem) {
    const status = sendError(
      core,
      wire,
      ctx,
      res,
      { kind: 'bad_request', model: call.model, message: problem },
      plainKey,
      call.model,
    );
    return finish(status);
  }
  if (core.credit.isExhausted(record.key)) {
    const status = sendError(
      core,
      wire,
      ctx,
      res,
      { kind: 'credit_exhausted', model: call.model },
      plainKey,
      call.model,
    );
    return finish(status);
  }

  let release: (() => void) | undefined;
  const queue = core.queues[flavor];
  if (queue) {
    try {
      release = await queue.acquire(signal);
    } catch {
      return finish(CLIENT_CLOSED);
    }
    if (!release) {
      const status = sendError(
        core,
        wire,
        ctx,
        res,
        { kind: 'server_busy', model: call.model },
        plainKey,
        call.model,
      );
      return finish(status);
    }
  }
  try {
    const bucket = `${record.key}\u0000${call.model}`;
    const limits = core.limitsFor(plainKey, call.model);
    const admission = core.quotas.admit(bucket, limits, call.inputTokens, core.time.now());
    if (!admission.ok) {
      const retryAfterMs = core.time.toReal(admission.retryAfterMs);
      const status = sendError(
        core,
        wire,
        ctx,
        res,
        {
          kind: 'rate_limit',
          model: call.model,
          dimension: admission.dimension,
          limit: admission.limit,
          used: admission.used,
          requested: admission.requested || 1,
          retryAfterMs,
        },
        plainKey,
        call.model,
        retryAfterMs,
      );
      return finish(status);
    }

    const latency = core.drawLatency();
    if (latency > 0) {
      try {
        await sleep(core.clock, core.time.toReal(latency), signal);
      } catch {
        return finish(CLIENT_CLOSED);
      }
    }

    const answer = generateAnswer(call, { seed: core.profile.seed, answerTokens: core.profile.answerTokens });
    core.quotas.recordOutput(admission as QuotaAdmission, answer.outputTokens);
    core.credit.spend(record.key, answer.inputTokens + answer.outputTokens);
    record.outputTokens = answer.outputTokens;
    const headers = responseHeaders(core, flavor, ctx, plainKey, call.model);
    if (!call.stream) {
      res.writeHead(200, { ...headers, 'content-type': 'application/json' });
      res.end(JSON.stringify(wire.success(call, answer, ctx)));
      return finish(200);
    }
    res.writeHead(200, { ...headers, 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    const events = wire.streamEvents(call, answer, ctx);
    if (rule?.kind === 'stream_error') {
      res.end(events.slice(0, Math.min(3, events.length - 1)).join('') + wire.streamError(ctx, rule.message));
      return finish(200, 'stream_error');
    }
    res.end(events.join(''));
    return finish(200);
  } finally {
    release?.();
  }
}

/** The headers every response of this flavor carries: request id and rate-limit state. */
function responseHeaders(
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
    return { 'request-id': ctx.requestId, ...anthropicRateLimitHeaders(snap, toReal, core.clock.now()) };
  }
  return { 'x-request-id': ctx.requestId, ...openaiRateLimitHeaders(snap, toReal) };
}

/** Writes the provider's error; returns the status. `retryAfterMs` (real) adds retry-after headers. */
function sendError(
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

/** Acts out a fault rule; resolves with the status to record once the call is over. */
async function applyFault(
  core: EmulatorCore,
  wire: WireModule,
  ctx: WireContext,
  rule: FaultRule,
  call: WireRequest,
  plainKey: string | undefined,
  req: IncomingMessage,
  res: ServerResponse,
  signal: AbortSignal,
): Promise<CallStatus> {
  const model = call.model;
  const retryReal = core.time.toReal(rule.retryAfterMs ?? 1000);
  const msg = rule.message !== undefined ? { message: rule.message } : {};
  const held = () =>
    new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      signal.addEventListener('abort', () => resolve(), { once: true });
    });
  switch (rule.kind) {
    case 'connection_reset':
      req.socket.destroy();
      return 'reset';
    case 'hang_before_headers':
      await held();
      res.destroy();
      return 'hang';
    case 'stall_after_headers': {
      // undici takes a close of a `connection: close` response as its end, even mid-chunk; a
      // keep-alive response makes the eventual destroy() read as the truncation it is.
      res.removeHeader('connection');
      const headers = responseHeaders(core, ctx.flavor, ctx, plainKey, model);
      const answer = generateAnswer(call, {
        seed: core.profile.seed,
        answerTokens: core.profile.answerTokens,
      });
      if (call.stream) {
        res.writeHead(200, { ...headers, 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.write(wire.streamEvents(call, answer, ctx).slice(0, 2).join(''));
      } else {
        res.writeHead(200, { ...headers, 'content-type': 'application/json' });
        const full = JSON.stringify(wire.success(call, answer, ctx));
        res.write(full.slice(0, Math.floor(full.length / 3)));
      }
      await held();
      res.destroy();
      return 'stall';
    }
    case 'rate_limit':
      return sendError(
        core,
        wire,
        ctx,
        res,
        { kind: 'rate_limit', model, retryAfterMs: retryReal, ...msg },
        plainKey,
        model,
        retryReal,
      );
    case 'rate_limit_no_retry_after':
      return sendError(
        core,
        wire,
        ctx,
        res,
        { kind: 'rate_limit', model, retryAfterMs: retryReal, ...msg },
        plainKey,
        model,
      );
    case 'spend_limit':
      return sendError(
        core,
        wire,
        ctx,
        res,
        { kind: 'spend_limit', model, ...msg },
        plainKey,
        model,
        undefined,
        {
          'x-should-retry': 'false',
        },
      );
    case 'overloaded':
      return sendError(
        core,
        wire,
        ctx,
        res,
        { kind: 'overloaded', model, ...msg },
        plainKey,
        model,
        rule.retryAfterMs !== undefined ? retryReal : undefined,
      );
    case 'bad_key': {
      const keyHint = plainKey ? maskSecret(plainKey) : undefined;
      return sendError(
        core,
        wire,
        ctx,
        res,
        { kind: 'bad_key', model, ...(keyHint ? { keyHint } : {}), ...msg },
        plainKey,
        model,
      );
    }
    default:
      return sendError(
        core,
        wire,
        ctx,
        res,
        {
          kind: rule.kind as Exclude<ErrorSpec['kind'], 'rate_limit' | 'bad_request' | 'not_found'>,
          model,
          ...msg,
        } as ErrorSpec,
        plainKey,
        model,
      );
  }
}

/** Answers an unknown path in the flavor's format. */
export function sendNotFound(
  core: EmulatorCore,
  flavor: EmulatorFlavor,
  res: ServerResponse,
  method: string,
  path: string,
): void {
  const ctx: WireContext = {
    flavor,
    requestId: flavor === 'anthropic' ? core.id('req_011C', 20) : core.id('req_', 32).toLowerCase(),
    now: core.clock.now(),
    id: (p, l) => core.id(p, l),
  };
  const out = core.wires[flavor].error(
    { kind: 'not_found', model: 'unknown', message: `Not found: ${method} ${path}` },
    ctx,
  );
  res.writeHead(out.status, { 'content-type': out.contentType });
  res.end(out.body);
}
