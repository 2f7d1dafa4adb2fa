import type { IncomingMessage, ServerResponse } from 'node:http';
import { maskSecret } from '../redact/secret-scrubber.ts';
import { generateAnswer } from './answer-generator.ts';
import type { EmulatorCore } from './emulator-core.ts';
import type { CallStatus, EmulatorFaultKind, FaultRule } from './emulator-types.ts';
import { responseHeaders, sendError } from './response-writer.ts';
import { holdUntilGone } from './stream-writer.ts';
import type { ErrorSpec, WireContext, WireModule } from './wire-module.ts';
import type { WireRequest } from './wire-request.ts';

/** A fault rule that fired on one call: where to answer, what was asked, and when the client leaves. */
interface FiredFault {
  readonly core: EmulatorCore;
  readonly wire: WireModule;
  readonly ctx: WireContext;
  readonly rule: FaultRule;
  readonly call: WireRequest;
  readonly plainKey: string | undefined;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
  readonly signal: AbortSignal;
  readonly model: string;
  /** The rule's retry-after (default 1 s), in real ms. */
  readonly retryReal: number;
  /** The rule's own message, where the format has one. */
  readonly msg: { readonly message?: string };
}

/** Acts out one kind of fault; resolves with the status to record once the call is over. */
type FaultAction = (f: FiredFault) => CallStatus | Promise<CallStatus>;

/** The provider's error for the fault's kind, in the wire's format. */
function sendFaultError(
  f: FiredFault,
  spec: ErrorSpec,
  retryAfterMs?: number,
  extra?: Record<string, string>,
) {
  return sendError(f.core, f.wire, f.ctx, f.res, spec, f.plainKey, f.model, retryAfterMs, extra);
}

// A hang or a stall lasts until the client gives up: on a virtual clock, the client's deadline must
// be free to come, so the held request counts as waiting for the clock (holdUntilGone).

async function hangBeforeHeaders({ core, res, signal }: FiredFault): Promise<CallStatus> {
  await holdUntilGone(core, signal);
  res.destroy();
  return 'hang';
}

async function stallAfterHeaders(f: FiredFault): Promise<CallStatus> {
  const { core, wire, ctx, call, plainKey, res, signal, model } = f;
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
  await holdUntilGone(core, signal);
  res.destroy();
  return 'stall';
}

/** The kinds acted out otherwise than with their plain error (the rest: {@link plainError}). */
const FAULT_ACTIONS: Partial<Record<EmulatorFaultKind, FaultAction>> = {
  connection_reset: ({ req }) => {
    req.socket.destroy();
    return 'reset';
  },
  hang_before_headers: hangBeforeHeaders,
  stall_after_headers: stallAfterHeaders,
  rate_limit: (f) =>
    sendFaultError(
      f,
      { kind: 'rate_limit', model: f.model, retryAfterMs: f.retryReal, ...f.msg },
      f.retryReal,
    ),
  rate_limit_no_retry_after: (f) =>
    sendFaultError(f, { kind: 'rate_limit', model: f.model, retryAfterMs: f.retryReal, ...f.msg }),
  spend_limit: (f) =>
    sendFaultError(f, { kind: 'spend_limit', model: f.model, ...f.msg }, undefined, {
      'x-should-retry': 'false',
    }),
  overloaded: (f) =>
    sendFaultError(
      f,
      { kind: 'overloaded', model: f.model, ...f.msg },
      f.rule.retryAfterMs !== undefined ? f.retryReal : undefined,
    ),
  bad_key: (f) => {
    const keyHint = f.plainKey ? maskSecret(f.plainKey) : undefined;
    return sendFaultError(f, { kind: 'bad_key', model: f.model, ...(keyHint ? { keyHint } : {}), ...f.msg });
  },
};

/** Every other kind: its error in the wire's format, nothing more. */
const plainError: FaultAction = (f) =>
  sendFaultError(f, {
    kind: f.rule.kind as Exclude<ErrorSpec['kind'], 'rate_limit' | 'bad_request' | 'not_found'>,
    model: f.model,
    ...f.msg,
  } as ErrorSpec);

/** Acts out a fault rule; resolves with the status to record once the call is over. */
export async function applyFault(
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
  const action = FAULT_ACTIONS[rule.kind] ?? plainError;
  const fault = { core, wire, ctx, rule, call, plainKey, req, res, signal, model, retryReal, msg };
  return action(fault);
}
