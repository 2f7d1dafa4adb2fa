import { view } from './page-view.ts';

/*
 * When the page is drawn: at most one render per animation frame, and live at most every LIVE_FRAME_MS, so
 * a storm's thousands of events a minute leave the main thread free for clicks. What a render draws (every
 * panel) is handed in once at start (`renderWith`): the panels ask for a frame here without importing the
 * page that draws them.
 */

/** Live redraws at most this often (real ms): enough for countdowns, cheap in a storm. */
const LIVE_FRAME_MS = 250;

let drawPage: () => void = () => {};
let frame = 0;
let lastFrame = 0;
let pace: ReturnType<typeof setTimeout> | undefined;

/** What a frame draws: the whole page. */
export function renderWith(draw: () => void): void {
  drawPage = draw;
}

export function scheduleRender(): void {
  if (frame || pace) return;
  const wait = view.mode === 'live' ? lastFrame + LIVE_FRAME_MS - performance.now() : 0;
  if (wait > 0) {
    pace = setTimeout(() => {
      pace = undefined;
      scheduleRender();
    }, wait);
    return;
  }
  frame = requestAnimationFrame(() => {
    frame = 0;
    lastFrame = performance.now();
    drawPage();
  });
}
