import { maskSecret } from '../redact/secret-scrubber.ts';
import type { CallRoute } from './call-routes.ts';
import { type EmulatedCall, sendCallError } from './emulated-call.ts';
import { keyFingerprint } from './emulator-core.ts';
import type { FaultRule } from './emulator-types.ts';
import type { QuotaAdmission } from './quota-windows.ts';
import { outputTokenProblem, quotaRefusal } from './request-limits.ts';
import { type WireRequest, WireRequestError } from './wire-request.ts';

/**
 * The stages of a call before its answer, in the pipeline's order: the request parsed, a fault rule drawn, the
 * refusals at the door (key, output limit, credit), then the quota window. Each refusal is the provider's own error
 * on the wire, sent and recorded here.
 */

/** The request read from its body (the record updated), or undefined once its 400 is sent and recorded. */
export function parseCall(c: EmulatedCall, route: CallRoute, body: string): WireRequest | undefined {
  const { record } = c;
  let call: WireRequest;
  try {
    let json: unknown;
    try {
      json = body ? JSON.parse(body) : undefined;
    } catch {
      throw new WireRequestError('The request body is not valid JSON.');
    }
    call = c.wire.parse(json, route);
  } catch (e) {
    const message = e instanceof WireRequestError ? e.message : 'invalid request';
    sendCallError(c, { kind: 'bad_request', model: record.model, message }, record.model);
    c.finish(400);
    return undefined;
  }
  record.model = call.model;
  record.stream = call.stream;
  record.inputTokens = call.inputTokens;
  return call;
}

/** The injected fault rule that fires on this call, if one does. */
export function pickFault(c: EmulatedCall, call: WireRequest): FaultRule | undefined {
  const { core, plainKey } = c;
  return core.faults.pick({
    flavor: c.flavor,
    keyIdentity: c.record.key,
    keyPlain: plainKey,
    keyFingerprint: plainKey ? keyFingerprint(plainKey) : 'none',
    model: call.model,
    stream: call.stream,
    at: core.time.now(),
  });
}

/** The status of a refusal at the door (an unknown key, an output limit too high, no credit left), once sent. */
export function refusalAtDoor(c: EmulatedCall, call: WireRequest): number | undefined {
  const { core, plainKey } = c;
  const known = core.knownKey(plainKey);
  if (!known && !core.profile.acceptAnyKey) {
    const keyHint = plainKey ? maskSecret(plainKey) : undefined;
    return sendCallError(
      c,
      { kind: 'bad_key', model: call.model, ...(keyHint ? { keyHint } : {}) },
      call.model,
    );
  }
  const problem = outputTokenProblem(c.flavor, call);
  if (problem) {
    return sendCallError(c, { kind: 'bad_request', model: call.model, message: problem }, call.model);
  }
  if (core.credit.isExhausted(c.record.key)) {
    return sendCallError(c, { kind: 'credit_exhausted', model: call.model }, call.model);
  }
  return undefined;
}

/** The call counted in its key+model quota window, or undefined once its 429 (with the waits) is sent and recorded. */
export function admitQuota(c: EmulatedCall, call: WireRequest): QuotaAdmission | undefined {
  const { core } = c;
  const bucket = `${c.record.key}\u0000${call.model}`;
  const limits = core.limitsFor(c.plainKey, call.model);
  const admission = core.quotas.admit(bucket, limits, call.inputTokens, core.time.now());
  if (!admission.ok) {
    const { spec, retryAfterMs } = quotaRefusal(c.flavor, call.model, admission, (ms) =>
      core.time.toReal(ms),
    );
    c.finish(sendCallError(c, spec, call.model, retryAfterMs));
    return undefined;
  }
  return admission as QuotaAdmission;
}
