import type { IncomingMessage, ServerResponse } from 'node:http';
import { admitQuota, parseCall, pickFault, refusalAtDoor } from './call-admission.ts';
import { CLIENT_CLOSED, sendStream, sendWhole, spendAnswer, waitLatency, waitTurn } from './call-answer.ts';
import type { CallRoute } from './call-routes.ts';
import { openCall } from './emulated-call.ts';
import type { EmulatorCore } from './emulator-core.ts';
import type { EmulatorFlavor } from './emulator-types.ts';
import { applyFault } from './fault-actions.ts';
import { STREAM_FAULTS } from './stream-writer.ts';

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
  const c = openCall(core, flavor, route, req, res, url);

  let body: string;
  try {
    body = await readBody(req);
  } catch {
    return c.finish(CLIENT_CLOSED);
  }
  const call = parseCall(c, route, body);
  if (!call) return;

  const rule = pickFault(c, call);
  if (rule && !STREAM_FAULTS.has(rule.kind)) {
    const status = await applyFault(core, c.wire, c.ctx, rule, call, c.plainKey, req, res, c.signal);
    return c.finish(status, rule.kind);
  }

  const refused = refusalAtDoor(c, call);
  if (refused !== undefined) return c.finish(refused);

  let release: (() => void) | undefined;
  const queue = core.queues[flavor];
  if (queue) {
    release = await waitTurn(c, queue, call);
    if (!release) return;
  }
  try {
    const admission = admitQuota(c, call);
    if (!admission) return;

    const latency = core.drawLatency();
    if (latency > 0 && !(await waitLatency(c, latency))) return c.finish(CLIENT_CLOSED);

    const answer = spendAnswer(c, call, admission);
    if (!call.stream) return c.finish(sendWhole(c, call, answer));
    return c.finish(await sendStream(c, call, answer, rule), rule?.kind);
  } finally {
    release?.();
  }
}
