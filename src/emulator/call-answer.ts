import { sleep } from '../clock/clock.ts';
import { parkOnClock } from '../clock/virtual-clock.ts';
import { generateAnswer } from './answer-generator.ts';
import { type EmulatedCall, sendCallError } from './emulated-call.ts';
import type { CallStatus, FaultRule } from './emulator-types.ts';
import type { LocalServerQueue } from './local-server-queue.ts';
import type { QuotaAdmission } from './quota-windows.ts';
import { responseHeaders } from './response-writer.ts';
import { writeStream } from './stream-writer.ts';
import type { GeneratedAnswer, WireRequest } from './wire-request.ts';

/**
 * The stages of a call that waits its turn and answers: the local server's queue, the drawn latency, then the
 * answer as one JSON body or a stream (which acts out a mid-stream fault rule).
 */

/** Recorded when the client went away before its answer (nginx/Ollama's "client closed request"). */
export const CLIENT_CLOSED = 499;

/**
 * The call's turn in a local server's queue: its release, or undefined once the call ended (its client left, or
 * the queue was full and the server's busy error is sent).
 */
export async function waitTurn(
  c: EmulatedCall,
  queue: LocalServerQueue,
  call: WireRequest,
): Promise<(() => void) | undefined> {
  let release: (() => void) | undefined;
  // Waiting behind other requests is waiting for their simulated latency: a virtual clock may move.
  const unpark = parkOnClock(c.core.clock);
  try {
    release = await queue.acquire(c.signal);
  } catch {
    c.finish(CLIENT_CLOSED);
    return undefined;
  } finally {
    unpark();
  }
  if (!release) c.finish(sendCallError(c, { kind: 'server_busy', model: call.model }, call.model));
  return release;
}

/** Waits the drawn latency (emulated ms); false when the client left meanwhile. */
export async function waitLatency(c: EmulatedCall, latency: number): Promise<boolean> {
  const { core } = c;
  const unpark = parkOnClock(core.clock);
  try {
    await sleep(core.clock, core.time.toReal(latency), c.signal);
    return true;
  } catch {
    return false;
  } finally {
    unpark();
  }
}

/** Generates the answer, counts its output tokens in the quota window and spends its credit. */
export function spendAnswer(c: EmulatedCall, call: WireRequest, admission: QuotaAdmission): GeneratedAnswer {
  const { core, record } = c;
  const answer = generateAnswer(call, { seed: core.profile.seed, answerTokens: core.profile.answerTokens });
  core.quotas.recordOutput(admission, answer.outputTokens);
  core.credit.spend(record.key, answer.inputTokens + answer.outputTokens);
  record.outputTokens = answer.outputTokens;
  return answer;
}

/** Answers a call that asked for no stream: one JSON body. */
export function sendWhole(c: EmulatedCall, call: WireRequest, answer: GeneratedAnswer): 200 {
  const { core, wire, ctx, res } = c;
  const headers = responseHeaders(core, c.flavor, ctx, c.plainKey, call.model);
  res.writeHead(200, { ...headers, 'content-type': 'application/json' });
  res.end(JSON.stringify(wire.success(call, answer, ctx)));
  return 200;
}

/** Streams the answer, acting out a mid-stream fault rule; resolves with the status to record. */
export function sendStream(
  c: EmulatedCall,
  call: WireRequest,
  answer: GeneratedAnswer,
  rule: FaultRule | undefined,
): Promise<CallStatus> {
  const { core, wire, ctx, res } = c;
  const headers = responseHeaders(core, c.flavor, ctx, c.plainKey, call.model);
  // A cut or a stall must read as the truncation it is: undici takes the close of a `connection: close`
  // response as its end, even mid-chunk.
  if (rule?.kind === 'stream_cut' || rule?.kind === 'stream_stall') res.removeHeader('connection');
  res.writeHead(200, { ...headers, 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  // A provider sends the 200 at once, before the first event (a stall before any content is after headers).
  res.flushHeaders();
  return writeStream(core, wire, ctx, res, wire.streamEvents(call, answer, ctx), rule, c.signal);
}
