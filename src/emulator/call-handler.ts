import type { IncomingMessage, ServerResponse } from 'node:http';
import { sleep } from '../clock/clock.ts';
import { parkOnClock } from '../clock/virtual-clock.ts';
import { maskSecret, scrubSecrets } from '../redact/secret-scrubber.ts';
import { generateAnswer } from './answer-generator.ts';
import { type CallRoute, extractKey } from './call-routes.ts';
import { type EmulatorCore, keyFingerprint } from './emulator-core.ts';
import type { CallRecord, CallStatus, EmulatorFaultKind, EmulatorFlavor } from './emulator-types.ts';
import { applyFault } from './fault-actions.ts';
import type { QuotaAdmission } from './quota-windows.ts';
import { outputTokenProblem, quotaRefusal } from './request-limits.ts';
import { responseHeaders, sendError, wireContext } from './response-writer.ts';
import { responsesWire } from './responses-wire.ts';
import { STREAM_FAULTS, writeStream } from './stream-writer.ts';
import { type WireRequest, WireRequestError } from './wire-request.ts';

/** Recorded when the client went away before its answer (nginx/Ollama's "client closed request"). */
const CLIENT_CLOSED = 499;

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
  // The client's FIN is read in the poll phase; 'close' comes only in the close phase, after the loop may already
  // have parsed that client's next request on another connection: a call ends, in the stats too, when its
  // client leaves.
  req.socket.once('end', () => {
    if (!res.writableFinished) gone.abort(new Error('client gone'));
  });
  const signal = AbortSignal.any([gone.signal, core.closing.signal]);

  const ctx = wireContext(core, flavor);

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
  if (rule && !STREAM_FAULTS.has(rule.kind)) {
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
    // Waiting behind other requests is waiting for their simulated latency: a virtual clock may move.
    const unpark = parkOnClock(core.clock);
    try {
      release = await queue.acquire(signal);
    } catch {
      return finish(CLIENT_CLOSED);
    } finally {
      unpark();
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
      const { spec, retryAfterMs } = quotaRefusal(flavor, call.model, admission, (ms) =>
        core.time.toReal(ms),
      );
      const status = sendError(core, wire, ctx, res, spec, plainKey, call.model, retryAfterMs);
      return finish(status);
    }

    const latency = core.drawLatency();
    if (latency > 0) {
      const unpark = parkOnClock(core.clock);
      try {
        await sleep(core.clock, core.time.toReal(latency), signal);
      } catch {
        return finish(CLIENT_CLOSED);
      } finally {
        unpark();
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
    // A cut or a stall must read as the truncation it is: undici takes the close of a `connection: close`
    // response as its end, even mid-chunk.
    if (rule?.kind === 'stream_cut' || rule?.kind === 'stream_stall') res.removeHeader('connection');
    res.writeHead(200, { ...headers, 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    // A provider sends the 200 at once, before the first event (a stall before any content is after headers).
    res.flushHeaders();
    const status = await writeStream(
      core,
      wire,
      ctx,
      res,
      wire.streamEvents(call, answer, ctx),
      rule,
      signal,
    );
    return finish(status, rule?.kind);
  } finally {
    release?.();
  }
}
