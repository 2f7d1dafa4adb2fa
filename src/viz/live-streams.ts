import type { IncomingMessage, ServerResponse } from 'node:http';
import { constants as zlibConstants, createGzip, type Gzip } from 'node:zlib';
import { scrubValue } from '../redact/secret-scrubber.ts';
import type { VizLiveSource } from './live-source.ts';
import type { VizEvent } from './viz-state-types.ts';
import { HttpError } from './viz-http.ts';

/** The bounds of the live streams, resolved from {@link VizServerOptions} (every default applied). */
export interface LiveStreamLimits {
  readonly heartbeatMs: number;
  readonly maxLiveClients: number;
  readonly maxBufferedBytes: number;
  readonly flushIntervalMs: number;
}

/**
 * The open live streams (`/api/live`): server-sent events of a live source, gzip-compressed for a client that
 * accepts it, a reader that lags dropped, and ended cleanly (flushed, compressor closed) when the server closes.
 */
export class LiveStreams {
  /** Each open live stream, with how to end it cleanly (flush and close its compressor). */
  readonly #streams = new Map<ServerResponse, () => void>();
  readonly #limits: LiveStreamLimits;
  #liveBytes = 0;
  #droppedSlowClients = 0;

  constructor(limits: LiveStreamLimits) {
    this.#limits = limits;
  }

  stats(): { liveClients: number; droppedSlowClients: number; liveBytes: number } {
    return {
      liveClients: this.#streams.size,
      droppedSlowClients: this.#droppedSlowClients,
      liveBytes: this.#liveBytes,
    };
  }

  /** Streams `source` on `res`: its state now, then every event; 503 when `maxLiveClients` are open. */
  serve(req: IncomingMessage, res: ServerResponse, source: VizLiveSource): void {
    const { maxLiveClients, maxBufferedBytes, heartbeatMs, flushIntervalMs } = this.#limits;
    if (this.#streams.size >= maxLiveClients)
      throw new HttpError(503, `at most ${maxLiveClients} live streams at once; close one and try again`);
    const gzip = this.#startEventStream(req, res);
    let allowance = maxBufferedBytes;
    let dirty = false;
    const waiting = () => res.writableLength + (gzip ? gzip.writableLength + gzip.readableLength : 0);
    let ended = false;
    const write = (text: string) => {
      // After `end`, a late sample must not write into the finished compressor (that would tear the stream).
      if (ended || res.writableEnded || res.destroyed) return;
      if (gzip) {
        gzip.write(text);
        dirty = true;
      } else res.write(text);
      // A reader that stopped reading is dropped: the run must not buffer for it without end.
      if (waiting() > allowance) {
        this.#droppedSlowClients++;
        gzip?.unpipe(res);
        gzip?.destroy();
        res.destroy();
      }
    };
    const flush = () => {
      if (!gzip || !dirty || ended || res.destroyed || gzip.destroyed) return;
      dirty = false;
      gzip.flush(zlibConstants.Z_SYNC_FLUSH);
    };
    // Snapshot and subscription in the same tick: no event falls between them. The snapshot itself may
    // be large; the allowance is what waits beyond it.
    const init = `event: init\ndata: ${JSON.stringify(scrubValue({ state: source.snapshot(), runId: source.runId ?? null }))}\n\n`;
    allowance = maxBufferedBytes + Buffer.byteLength(init);
    write(init);
    flush();
    const unsubscribe = source.subscribe((event: VizEvent) => {
      write(`data: ${JSON.stringify(scrubValue(event))}\n\n`);
    });
    const beat = setInterval(() => {
      write(': keep-alive\n\n');
      flush();
    }, heartbeatMs);
    beat.unref();
    const flusher = gzip ? setInterval(flush, flushIntervalMs) : undefined;
    flusher?.unref();
    const end = () => {
      flush();
      ended = true;
      if (gzip) gzip.end();
      else res.end();
    };
    this.#streams.set(res, end);
    const done = () => {
      clearInterval(beat);
      if (flusher) clearInterval(flusher);
      unsubscribe();
      this.#streams.delete(res);
    };
    req.once('close', done);
    res.once('close', done);
  }

  /**
   * The event stream's head, and its compressor when the client takes gzip; every byte written to `res` is
   * counted (as sent on the wire, after compression).
   */
  #startEventStream(req: IncomingMessage, res: ServerResponse): Gzip | undefined {
    // A browser accepts gzip: the feed's JSON is repetitive and compresses about tenfold. A client that
    // does not ask for it gets the plain stream, written as events come.
    const gzip: Gzip | undefined = /\bgzip\b/.test(String(req.headers['accept-encoding'] ?? ''))
      ? createGzip({ level: 6 })
      : undefined;
    res.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      ...(gzip ? { 'content-encoding': 'gzip' } : {}),
    });
    const rawWrite = res.write.bind(res);
    res.write = ((chunk: string | Uint8Array, ...rest: never[]) => {
      this.#liveBytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
      return rawWrite(chunk, ...rest);
    }) as typeof res.write;
    if (gzip) {
      gzip.pipe(res);
      gzip.on('error', () => res.destroy());
    }
    return gzip;
  }

  /**
   * Ends every open stream; resolves once each has taken its last bytes, or after `graceMs` (real ms),
   * whichever comes first.
   */
  endAll(graceMs: number): Promise<unknown> {
    const open = [...this.#streams];
    this.#streams.clear();
    for (const [, end] of open) end();
    // What the streams were told last (the run's end) reaches the page before the sockets go.
    const sent = Promise.all(
      open.map(
        ([res]) =>
          new Promise<void>((done) => {
            if (res.writableFinished || res.destroyed) return done();
            res.once('finish', done);
            res.once('close', done);
          }),
      ),
    );
    // Bounded: a reader that does not take the last bytes within the grace loses them, not the caller.
    const grace = new Promise<void>((done) => setTimeout(done, graceMs).unref());
    return Promise.race([sent, grace]);
  }
}
