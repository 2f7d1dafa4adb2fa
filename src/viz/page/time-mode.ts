import { setText, testid } from './page-dom.ts';
import { getJson } from './page-json.ts';
import { forgetDrawnTimes } from './page-render.ts';
import { timeFmt } from './time-format.ts';

/*
 * Time: the scenario's zone, UTC or relative (the time-mode select); and whether the clock is simulated
 * (a run's time scale, said under the clock).
 */

export interface StoredRunConfig {
  readonly timeScale?: number;
  readonly origin?: number;
  readonly report?: { readonly timeZone?: string; readonly concurrencyLimit?: number };
  readonly concurrency?: { readonly limit?: number };
}

export function configureTime(config: StoredRunConfig | undefined): void {
  const zone = config?.report?.timeZone ?? null;
  timeFmt.zone = zone;
  if (typeof config?.origin === 'number') timeFmt.origin = config.origin;
  const select = testid('time-mode') as HTMLSelectElement;
  const zoneOption = select.querySelector('option[value="zone"]') as HTMLOptionElement;
  zoneOption.disabled = zone === null;
  zoneOption.textContent = zone ? `scenario zone (${zone})` : 'scenario zone (not known)';
  timeFmt.mode = zone ? 'zone' : 'utc';
  select.value = timeFmt.mode;
  const scale = config?.timeScale;
  setText(
    testid('clock-note'),
    typeof scale === 'number' && scale !== 1
      ? `simulated clock: ${scale}× real time (times are the scenario's, not the wall's)`
      : '',
  );
}

/** The time-mode select: everything that writes a time is drawn again (`redraw` draws the page). */
export function listenForTimeMode(redraw: () => void): void {
  const select = testid('time-mode') as HTMLSelectElement;
  select.addEventListener('change', () => {
    timeFmt.mode = select.value as typeof timeFmt.mode;
    // Everything that writes a time is drawn again.
    forgetDrawnTimes();
    redraw();
  });
}

export async function loadRunConfig(runId: string): Promise<StoredRunConfig | undefined> {
  try {
    const run = await getJson<{ config?: StoredRunConfig }>(`/api/runs/${encodeURIComponent(runId)}`);
    return run.config ?? undefined;
  } catch {
    return undefined;
  }
}
