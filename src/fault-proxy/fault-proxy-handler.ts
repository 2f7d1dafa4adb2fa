import type { IncomingMessage, ServerResponse } from 'node:http';
import type { FaultRules } from '../emulator/fault-rules.ts';
import { type ForwardParts, forward, holdUntilGone } from './fault-proxy-forward.ts';
import { callShape, proxyWireContext, sendFaultError } from './fault-proxy-wire.ts';

/** What the proxy's handler needs, every option resolved. */
export interface ProxyParts extends ForwardParts {
  /** The endpoint's rules, drawn from on each call. */
  readonly rules: FaultRules;
  /** When the proxy started on its clock: rule windows count from it. */
  readonly start: number;
  /** Simulated ms per real ms of the waits written on the wire. */
  readonly wireScale: number;
}

/** One call through the proxy: a fault rule acted out if one fires, else forwarded untouched. */
export async function handleProxyCall(
  parts: ProxyParts,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const { flavor, rules, clock, counts } = parts;
  const chunks: Buffer[] = [];
  try {
    for await (const c of req) chunks.push(c as Buffer);
  } catch {
    return;
  }
  const body = Buffer.concat(chunks);
  const url = new URL(req.url ?? '/', 'http://proxy.invalid');
  const shape = callShape(flavor, url.pathname, body.toString('utf8'));
  const rule = rules.pick({
    flavor,
    keyIdentity: 'proxy',
    keyPlain: undefined,
    keyFingerprint: 'none',
    model: shape.model,
    stream: shape.stream,
    at: clock.now() - parts.start,
  });
  if (rule) counts.faulted[rule.kind] = (counts.faulted[rule.kind] ?? 0) + 1;
  if (!rule) return forward(parts, req, res, body);
  switch (rule.kind) {
    case 'stall_after_headers':
    case 'stream_error':
      return forward(parts, req, res, body, rule);
    case 'connection_reset':
      req.socket.destroy();
      return;
    case 'hang_before_headers':
      await holdUntilGone(res, clock, parts.closing);
      res.destroy();
      return;
    default:
      sendFaultError(res, rule, shape.model, parts.wire, proxyWireContext(flavor, clock), parts.wireScale);
  }
}
