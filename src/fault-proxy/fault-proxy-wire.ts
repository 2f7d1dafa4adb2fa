import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { Clock } from '../clock/clock.ts';
import { anthropicWire } from '../emulator/anthropic-wire.ts';
import type { EmulatorFlavor, FaultRule } from '../emulator/emulator-types.ts';
import { geminiWire } from '../emulator/gemini-wire.ts';
import { openaiWire } from '../emulator/openai-wire.ts';
import { retryAfterHeaders } from '../emulator/rate-limit-headers-out.ts';
import type { ErrorSpec, WireContext, WireModule } from '../emulator/wire-module.ts';

/**
 * The fault proxy's side of a provider's wire: which format an endpoint speaks, what a call asks for (model,
 * stream), and a fault's error written as that provider writes it. The formats are the emulator's own.
 */

/** The emulator's wire module of a flavor: how its errors and stream events are written. */
export function wireOf(flavor: EmulatorFlavor): WireModule {
  if (flavor === 'anthropic') return anthropicWire;
  if (flavor === 'gemini') return geminiWire;
  return openaiWire(flavor);
}

/** The model a call names and whether it streams, read from its path (Gemini) or its JSON body. */
export function callShape(
  flavor: EmulatorFlavor,
  path: string,
  body: string,
): { model: string; stream: boolean } {
  const gemini = /\/models\/([^/:]+):(generateContent|streamGenerateContent)/.exec(path);
  if (flavor === 'gemini' && gemini)
    return { model: decodeURIComponent(gemini[1] as string), stream: gemini[2] === 'streamGenerateContent' };
  try {
    const json = JSON.parse(body) as { model?: unknown; stream?: unknown };
    return { model: typeof json.model === 'string' ? json.model : 'unknown', stream: json.stream === true };
  } catch {
    return { model: 'unknown', stream: false };
  }
}

/** A fresh rendering context for one answer: a request id in the flavor's style, random ids. */
export function proxyWireContext(flavor: EmulatorFlavor, clock: Clock): WireContext {
  return {
    flavor,
    requestId: flavor === 'anthropic' ? `req_011C${randomId(20)}` : `req_${randomId(32).toLowerCase()}`,
    now: clock.now(),
    id: (prefix, length) => `${prefix}${randomId(length)}`,
  };
}

/**
 * Answers with a fault rule's error in the wire's format: its status, body, request id, and the wait (retry-after
 * headers, or Gemini's body) of a rule that asks for one.
 */
export function sendFaultError(
  res: ServerResponse,
  rule: FaultRule,
  model: string,
  wire: WireModule,
  ctx: WireContext,
  wireScale: number,
): void {
  const { flavor } = ctx;
  // On the wire in the real endpoint's time (the engine scales it back onto the run's clock).
  const retryMs = (rule.retryAfterMs ?? 1_000) / wireScale;
  const spec: ErrorSpec =
    rule.kind === 'rate_limit' || rule.kind === 'rate_limit_no_retry_after'
      ? {
          kind: 'rate_limit',
          model,
          retryAfterMs: retryMs,
          ...(rule.message ? { message: rule.message } : {}),
        }
      : ({ kind: rule.kind, model, ...(rule.message ? { message: rule.message } : {}) } as ErrorSpec);
  const out = wire.error(spec, ctx);
  const asksToWait =
    rule.kind === 'rate_limit' || (rule.kind === 'overloaded' && rule.retryAfterMs !== undefined);
  // Gemini says when to come back in the body (RetryInfo); the others in headers.
  const retry =
    asksToWait && flavor !== 'gemini' && flavor !== 'gemini-compat' ? retryAfterHeaders(retryMs) : {};
  const id = flavor === 'anthropic' ? { 'request-id': ctx.requestId } : { 'x-request-id': ctx.requestId };
  res.writeHead(out.status, {
    ...id,
    ...retry,
    ...(rule.kind === 'spend_limit' ? { 'x-should-retry': 'false' } : {}),
    'content-type': out.contentType,
  });
  res.end(out.body);
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

function randomId(length: number): string {
  const bytes = randomBytes(length);
  let out = '';
  for (const b of bytes) out += BASE62[b % 62];
  return out;
}
