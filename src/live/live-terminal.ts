import { createLogUpdate } from 'log-update';

/** The live view's frame on a terminal, redrawn in place (log-update). */
export interface LiveTerminal {
  /** Something changed: redraw at the next tick. */
  touch(): void;
  /** Redraws now. */
  draw(): void;
  /** Writes a line above the frame (it stays in the scrollback), then redraws. */
  persist(text: string): void;
  /** Stops the ticks, draws the last frame and leaves it on screen (cursor restored). */
  stop(): void;
}

/**
 * Starts redrawing `frame()` on a terminal: at most `maxRedrawsPerSecond` times a second when something changed,
 * and twice a second anyway. The first frame is drawn by the caller (`draw()`), once it listens to the run.
 */
export function startLiveTerminal(
  out: NodeJS.WriteStream,
  frame: () => string[],
  maxRedrawsPerSecond: number,
): LiveTerminal {
  const interval = 1000 / Math.max(1, maxRedrawsPerSecond);
  const logUpdate = createLogUpdate(out);
  let dirty = true;
  let lastDraw = 0;
  const draw = () => {
    logUpdate(frame().join('\n'));
    dirty = false;
    lastDraw = performance.now();
  };
  // Redraw when something changed, and twice a second anyway so countdowns and health move.
  const timer = setInterval(() => {
    if (dirty || performance.now() - lastDraw >= 500) draw();
  }, interval);
  timer?.unref?.();

  return {
    touch() {
      dirty = true;
    },
    draw,
    persist(text) {
      logUpdate.persist(text);
      draw();
    },
    stop() {
      clearInterval(timer);
      draw();
      logUpdate.done();
    },
  };
}
