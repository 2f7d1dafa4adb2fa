import { EventEmitter } from 'node:events';
import { Socket } from 'node:net';
import { isatty, ReadStream } from 'node:tty';
import type { ByokConsoleInput } from './byok-console.ts';
import { keyBuffer } from '../redact/sealed-key.ts';

/**
 * The bytes typed on a terminal or written into a pipe, read into ONE buffer of ours (Node's `onread`
 * option: libuv reads straight into it, so no buffer Node allocates — and frees unwiped — ever holds a
 * typed key). Each chunk is handed to the `/byok` console synchronously and wiped right after.
 */

/** Size of the read buffer: libuv never reads more at once. */
const READ_BYTES = 16 * 1024;

/**
 * A command input over a file descriptor, for {@link startByokConsole}. Reading starts at once; `pause()`,
 * `resume()` and `unref()` behave as on a socket; `setRawMode` exists on a terminal. Do not touch
 * `process.stdin` as well: two readers on one descriptor would split the typing between them.
 *
 * @example
 * ```ts
 * if (canReadCommands(0)) startByokConsole({ input: openCommandInput(0), byok: supervisor.byok, print });
 * ```
 */
export function openCommandInput(fd = 0): ByokConsoleInput & { destroy(): void } {
  const events = new EventEmitter();
  const buffer = keyBuffer(READ_BYTES);
  const onread = {
    buffer,
    callback: (nread: number, buf: Uint8Array) => {
      const chunk = Buffer.from(buf.buffer, buf.byteOffset, nread);
      try {
        events.emit('data', chunk);
      } finally {
        chunk.fill(0);
      }
    },
  };
  const tty = isatty(fd);
  const socket: Socket = tty
    ? new ReadStream(fd, { onread } as ConstructorParameters<typeof ReadStream>[1])
    : // `onread` is a documented net.Socket option (the `net.connect` docs) missing from the constructor's types.
      new Socket({ fd, readable: true, writable: false, onread } as ConstructorParameters<typeof Socket>[0]);
  let ended = false;
  const end = () => {
    if (ended) return;
    ended = true;
    buffer.fill(0);
    events.emit('end');
  };
  socket.on('end', end);
  socket.on('close', end);
  // A broken terminal or pipe ends the input; it must never crash the run.
  socket.on('error', end);
  return {
    isTTY: tty,
    on(event: string, listener: (...args: unknown[]) => void) {
      events.on(event, listener);
      return this;
    },
    off(event: string, listener: (...args: unknown[]) => void) {
      events.off(event, listener);
      return this;
    },
    setRawMode(mode: boolean) {
      if (socket instanceof ReadStream) socket.setRawMode(mode);
      return this;
    },
    pause() {
      socket.pause();
      return this;
    },
    resume() {
      socket.resume();
      return this;
    },
    unref() {
      socket.unref();
      return this;
    },
    destroy() {
      socket.destroy();
      buffer.fill(0);
    },
  } as ByokConsoleInput & { destroy(): void };
}
