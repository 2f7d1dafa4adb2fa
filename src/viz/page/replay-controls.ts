import type { VizEvent } from '../viz-state-types.ts';
import { byId, setText } from './page-dom.ts';
import { scrubTo, showInstant } from './replay-scrubber.ts';

/*
 * Replay's controls: the scrubber, steps to the previous / next event and to the next fault, and play at a
 * chosen speed.
 */

/** Wires the controls over the run's `events` (their `times`), the last of which is `last`. */
export function listenForReplayControls(
  events: readonly VizEvent[],
  times: readonly number[],
  last: number,
): void {
  const scrubber = byId('scrubber') as HTMLInputElement;
  scrubber.addEventListener('input', showInstant);
  scrubber.addEventListener('change', showInstant);
  // Steps: the previous / next event, the next fault; and play at a chosen speed.
  const times1 = [...new Set(times)].sort((a, b) => a - b);
  const faults = events
    .filter((e) => e.type === 'call.attempt' && (e.data as { outcome?: string }).outcome === 'fault')
    .map((e) => Number(e.at));
  const step = (to: number | undefined) => {
    if (to !== undefined) scrubTo(to);
  };
  byId('prev-event').addEventListener('click', () =>
    step([...times1].reverse().find((x) => x < Number(scrubber.value))),
  );
  byId('next-event').addEventListener('click', () => step(times1.find((x) => x > Number(scrubber.value))));
  byId('next-fault').addEventListener('click', () => step(faults.find((x) => x > Number(scrubber.value))));
  listenForPlay(scrubber, last);
}

/** Play moves the scrubber at the chosen speed (every 200 ms) and stops at `last`; pressed again, it pauses. */
function listenForPlay(scrubber: HTMLInputElement, last: number): void {
  let playing: ReturnType<typeof setInterval> | undefined;
  byId('play').addEventListener('click', () => {
    if (playing) {
      clearInterval(playing);
      playing = undefined;
      setText(byId('play'), 'play');
      return;
    }
    setText(byId('play'), 'pause');
    let wall = performance.now();
    playing = setInterval(() => {
      const speed = Number((byId('speed') as HTMLSelectElement).value) || 1;
      const nowWall = performance.now();
      const next = Math.min(last, Number(scrubber.value) + (nowWall - wall) * speed);
      wall = nowWall;
      scrubTo(Math.round(next));
      if (next >= last && playing) {
        clearInterval(playing);
        playing = undefined;
        setText(byId('play'), 'play');
      }
    }, 200);
  });
}
