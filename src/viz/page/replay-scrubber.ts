import { byId, setText, testid } from './page-dom.ts';
import { render } from './page-render.ts';
import { view } from './page-view.ts';
import { replayEventCount, replayStateAt } from './replay-history.ts';
import { clockText } from './time-format.ts';

/* Replay's instant: the scrubber's value; moving it shows the fold of the events at or before it. */

export function scrubTo(t: number): void {
  const scrubber = byId('scrubber') as HTMLInputElement;
  scrubber.value = String(t);
  showInstant();
}

export function showInstant(): void {
  const scrubber = byId('scrubber') as HTMLInputElement;
  const t = Number(scrubber.value);
  view.state = replayStateAt(t);
  view.now = t;
  setText(testid('scrubber-time'), clockText(t));
  setText(testid('scrubber-events'), `${view.state.applied} / ${replayEventCount()} events`);
  scrubber.setAttribute('data-at', String(t));
  render();
}
