import { type VizCheck, vizCheckOf } from '../viz-state-types.ts';
import { emptyVizState } from '../viz-state.ts';
import { byId, setText, testid } from './page-dom.ts';
import { getJson } from './page-json.ts';
import { view } from './page-view.ts';
import { addReplayChecks, foldReplay, loadRunEvents } from './replay-history.ts';
import { listenForReplayControls } from './replay-controls.ts';
import { showInstant } from './replay-scrubber.ts';
import { configureTime, type StoredRunConfig } from './time-mode.ts';

/*
 * Replay (?run=<id>): loads the run's event log and shows the fold of the events at or before the
 * scrubber's instant; the timeline always shows the whole run (the same instant looks the same wherever
 * the scrubber is).
 */

export async function startReplay(runId: string): Promise<void> {
  view.mode = 'replay';
  view.runId = runId;
  setText(testid('mode'), 'replay');
  const run = encodeURIComponent(runId);
  const record = await getJson<{ status?: string; config?: StoredRunConfig }>(`/api/runs/${run}`);
  configureTime(record.config);
  // A scenario run stores its limit with the report's settings; a hand-made run may say it directly.
  const limit = record.config?.concurrency?.limit ?? record.config?.report?.concurrencyLimit;
  const initial = emptyVizState({ limit: typeof limit === 'number' ? limit : null });
  const events = await loadRunEvents(run);
  foldReplay(events, initial);
  const times = events.map((e) => Number(e.at)).filter(Number.isFinite);
  const first = times.length ? Math.min(...times) : 0;
  const last = times.length ? Math.max(...times) : 0;
  view.span = { start: first, end: last };
  byId('replay-bar').hidden = false;
  const scrubber = byId('scrubber') as HTMLInputElement;
  scrubber.min = String(first);
  scrubber.max = String(last);
  scrubber.value = String(last);
  listenForReplayControls(events, times, last);
  // The report's checks, for the run's end.
  if (record.status === 'completed' || record.status === 'failed') await addReportChecks(run);
  showInstant();
}

async function addReportChecks(run: string): Promise<void> {
  try {
    const report = await getJson<{ checks: VizCheck[] }>(`/api/runs/${run}/report`);
    addReplayChecks(report.checks.map(vizCheckOf));
  } catch {
    // A run whose report cannot be built is still replayed; its checks are not shown.
  }
}
