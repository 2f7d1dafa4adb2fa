import type { IncomingMessage, ServerResponse } from 'node:http';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import { type CallRoute, extractKey } from './call-routes.ts';
import type { EmulatorCore } from './emulator-core.ts';
import type { CallRecord, CallStatus, EmulatorFaultKind, EmulatorFlavor } from './emulator-types.ts';
import { sendError, wireContext } from './response-writer.ts';
import { responsesWire } from './responses-wire.ts';
import type { ErrorSpec, WireContext, WireModule } from './wire-module.ts';

/** One call as it goes through the emulator's pipeline: its record, where it answers, when its client left. */
export interface EmulatedCall {
  readonly core: EmulatorCore;
  readonly flavor: EmulatorFlavor;
  readonly wire: WireModule;
  readonly ctx: WireContext;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly plainKey: string | undefined;
  readonly record: CallRecord;
  /** Aborts when the client goes away or the emulator closes: that ends holds and waits. */
  readonly signal: AbortSignal;
  /** Records the call's end (stats, one debug line) the first time; later calls do nothing. */
  finish(status: CallStatus, fault?: EmulatorFaultKind): void;
}

/** A call begun: counted in the stats, its record started, its client watched, its wire context drawn. */
export function openCall(
  core: EmulatorCore,
  flavor: EmulatorFlavor,
  route: CallRoute,
  req: IncomingMessage,
  res: ServerResponse,
  url: URL,
): EmulatedCall {
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
  return { core, flavor, wire, ctx, req, res, plainKey, record, signal, finish };
}

/** Writes the provider's error for `spec` on the call's response; returns the status. */
export function sendCallError(
  c: EmulatedCall,
  spec: ErrorSpec,
  model: string,
  retryAfterMs?: number,
): number {
  return sendError(c.core, c.wire, c.ctx, c.res, spec, c.plainKey, model, retryAfterMs);
}
