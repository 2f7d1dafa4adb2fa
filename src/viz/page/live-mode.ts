import type { VizPageConfig } from '../viz-api.ts';
import type { VizEvent, VizState } from '../viz-state-types.ts';
import { applyEvent } from '../viz-state.ts';
import { h, setText, testid } from './page-dom.ts';
import { noteTurn, view } from './page-view.ts';
import { scheduleRender } from './render-frame.ts';
import { configureTime, loadRunConfig } from './time-mode.ts';

/*
 * Live: the SSE feed (/api/live) folded with the same reducer as the server; the connection's state said
 * under the title (connected, reconnecting, server gone), and a new run on the same port offered, never
 * swapped in.
 */

export function startLive(runId: string | null, config: VizPageConfig): void {
  view.mode = 'live';
  view.runId = runId;
  setText(testid('mode'), 'live');
  const status = testid('connection');
  const source = new EventSource('/api/live');
  let gone = false;
  source.addEventListener('init', (e) => {
    const init = JSON.parse((e as MessageEvent<string>).data) as { state: VizState; runId: string | null };
    // A new run on the same port is offered, never swapped in: this page keeps the run it showed.
    if (view.state.applied > 0 && init.runId !== view.runId) {
      source.close();
      const offer = testid('new-run');
      offer.hidden = false;
      offer.replaceChildren(
        `A new run${init.runId ? ` (${init.runId})` : ''} is live on this port: `,
        h('a', { href: '/', 'data-testid': 'new-run-open' }, 'open it'),
      );
      setText(status, 'this run is over; the server now serves another');
      status.setAttribute('data-connected', 'other-run');
      return;
    }
    gone = false;
    status.setAttribute('data-inits', String(Number(status.getAttribute('data-inits') ?? 0) + 1));
    view.state = init.state;
    view.history = init.state;
    const first = view.runId === null && init.runId !== null;
    view.runId = init.runId ?? view.runId;
    view.now = init.state.now;
    // A recorded run says its zone and time scale (the live page of a run with a store).
    if (first && config.replay)
      void loadRunConfig(init.runId!).then((c) => {
        configureTime(c);
        scheduleRender();
      });
    setText(status, 'connected');
    status.setAttribute('data-connected', 'true');
    scheduleRender();
  });
  source.addEventListener('message', (e) => {
    const event = JSON.parse((e as MessageEvent<string>).data) as VizEvent;
    view.state = applyEvent(view.state, event);
    view.history = view.state;
    view.now = view.state.now;
    if (event.type !== 'viz.sample') {
      view.log.push(event);
      noteTurn(event);
    }
    scheduleRender();
  });
  source.addEventListener('error', () => {
    if (gone) return;
    setText(status, 'reconnecting…');
    status.setAttribute('data-connected', 'false');
    // Is anyone there? A refused request means the server stopped: say so instead of waiting forever.
    fetch('/api/config', { signal: AbortSignal.timeout(3000) })
      .then((r) => {
        if (!r.ok) throw new Error(String(r.status));
      })
      .catch(() => {
        gone = true;
        setText(status, 'server gone');
        status.setAttribute('data-connected', 'gone');
      });
  });
}
