import type { IncomingMessage, ServerResponse } from 'node:http';
import { parkOnClock } from '../clock/virtual-clock.ts';
import { maskSecret } from '../redact/secret-scrubber.ts';
import { generateAnswer } from './answer-generator.ts';
import type { EmulatorCore } from './emulator-core.ts';
import type { CallStatus, FaultRule } from './emulator-types.ts';
import { responseHeaders, sendError } from './response-writer.ts';
import type { ErrorSpec, WireContext, WireModule } from './wire-module.ts';
import type { WireRequest } from './wire-request.ts';

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
  // A hang or a stall lasts until the client gives up: on a virtual clock, the client's deadline must
  // be free to come, so the held request counts as waiting for the clock.
  const held = () =>
    new Promise<void>((resolve) => {
      if (signal.aborted) return resolve();
      const unpark = parkOnClock(core.clock);
      const unhold = core.stats.hold();
      signal.addEventListener(
        'abort',
        () => {
          unhold();
          unpark();
          resolve();
        },
        { once: true },
      );
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
