import type { ServerResponse } from 'node:http';
import { parkOnClock } from '../clock/virtual-clock.ts';
import type { EmulatorCore } from './emulator-core.ts';
import type { CallStatus, EmulatorFaultKind, FaultRule } from './emulator-types.ts';
import { isContentEvent, type WireContext, type WireModule } from './wire-module.ts';

/**
 * Writes a streamed answer one SSE event per write (as a provider flushes them), and acts out the mid-stream
 * faults: an error event, a cut or a stall after N content events, a final event cut mid-JSON, a stream
 * without usage.
 */

/** Fault kinds that act on a stream after its 200 (they never fire on a non-streamed call). */
export const STREAM_FAULTS: ReadonlySet<EmulatorFaultKind> = new Set([
  'stream_error',
  'stream_cut',
  'stream_stall',
  'stream_truncated',
  'stream_no_usage',
]);

/** Resolves when the client has gone (or the emulator closes); a virtual clock may move meanwhile. */
export function holdUntilGone(core: EmulatorCore, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
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
}

/** The events before the fault: everything up to and including the `n`th content event (n = 0: the preamble). */
function beforeContent(events: readonly string[], n: number): string[] {
  const out: string[] = [];
  let seen = 0;
  for (const e of events) {
    const content = isContentEvent(e);
    if (content && seen >= n) break;
    out.push(e);
    if (content) seen++;
  }
  return out;
}

/** The same event without usage (a proxy or a compatible server that sends none); undefined: drop it. */
function withoutUsage(event: string): string | undefined {
  const at = event.indexOf('data: {');
  if (at < 0) return event;
  const head = event.slice(0, at);
  let data: Record<string, unknown>;
  try {
    data = JSON.parse(event.slice(at + 6).trim()) as Record<string, unknown>;
  } catch {
    return event;
  }
  // OpenAI's include_usage chunk carries nothing else.
  if (Array.isArray(data.choices) && data.choices.length === 0) return undefined;
  delete data.usage;
  delete data.usageMetadata;
  const message = data.message as Record<string, unknown> | undefined;
  if (message && typeof message === 'object') delete message.usage;
  return `${head}data: ${JSON.stringify(data)}\n\n`;
}

function writeAll(res: ServerResponse, events: readonly string[]): void {
  for (const e of events) res.write(e);
}

/**
 * Streams `events` to `res` (headers already written), acting out `rule` when it is a stream fault. Resolves with
 * the status to record.
 */
export async function writeStream(
  core: EmulatorCore,
  wire: WireModule,
  ctx: WireContext,
  res: ServerResponse,
  events: readonly string[],
  rule: FaultRule | undefined,
  signal: AbortSignal,
): Promise<CallStatus> {
  const n = rule?.afterChunks ?? 1;
  switch (rule?.kind) {
    case 'stream_error': {
      // Without afterChunks: the first 3 events, as this fault always did.
      const head =
        rule.afterChunks === undefined
          ? events.slice(0, Math.min(3, events.length - 1))
          : beforeContent(events, n);
      writeAll(res, head);
      res.end(wire.streamError(ctx, rule.message));
      return 200;
    }
    case 'stream_cut':
      writeAll(res, beforeContent(events, n));
      // Let the written events reach the socket first, then drop it: the client reads a body that ends mid-way.
      await new Promise<void>((resolve) => res.write('', () => resolve()));
      res.destroy();
      return 'reset';
    case 'stream_stall':
      writeAll(res, beforeContent(events, n));
      await holdUntilGone(core, signal);
      res.destroy();
      return 'stall';
    case 'stream_truncated': {
      let last = events.length - 1;
      while (last > 0 && !events[last]!.includes('data: {')) last--;
      writeAll(res, events.slice(0, last));
      const final = events[last] ?? '';
      res.end(final.slice(0, Math.max(1, Math.floor(final.length / 2))));
      return 200;
    }
    case 'stream_no_usage':
      for (const e of events) {
        const out = withoutUsage(e);
        if (out !== undefined) res.write(out);
      }
      res.end();
      return 200;
    default:
      writeAll(res, events);
      res.end();
      return 200;
  }
}
