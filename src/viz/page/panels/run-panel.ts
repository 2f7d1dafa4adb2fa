import type { VizCheck, VizState } from '../../viz-state-types.ts';
import { h, setText, testid } from '../page-dom.ts';
import { view } from '../page-view.ts';

/* The run's progress (round, committed rounds), its status, and once it finished, its report's checks. */

let checksKey = '';

/** Draws the checks again on the next render (the way times are written changed). */
export function forgetRunChecks(): void {
  checksKey = '';
}

export function renderRun(state: VizState): void {
  const run = state.run;
  const rounds = run.rounds;
  setText(
    testid('run-round'),
    rounds
      ? `round ${Math.max(run.round, run.committedRound)} / ${rounds} (${run.committedRound} committed)`
      : '',
  );
  const progress = testid('run-progress') as HTMLProgressElement;
  progress.max = rounds ?? 1;
  progress.value = rounds ? run.committedRound : 0;
  const finished = run.finishedAt !== null && (view.now === null || run.finishedAt <= view.now);
  const status = testid('run-status');
  setText(status, finished ? `run finished: ${run.status}` : run.status === 'unknown' ? '' : run.status);
  status.setAttribute('data-finished', finished ? 'true' : 'false');
  const checks = finished ? run.checks : null;
  const key = JSON.stringify(checks);
  if (key === checksKey) return;
  checksKey = key;
  const box = testid('run-checks');
  if (!checks || checks.length === 0) {
    box.replaceChildren();
    return;
  }
  const fails = checks.filter((c) => c.pass === false).length;
  box.replaceChildren(
    h(
      'span',
      { class: fails ? 'verdict fail' : 'verdict pass', 'data-testid': 'run-verdict' },
      fails ? `FAIL (${fails} of ${checks.length} checks)` : `PASS (${checks.length} checks)`,
    ),
    ...checks.map((c: VizCheck) =>
      h(
        'span',
        {
          class: `check ${c.pass === true ? 'pass' : c.pass === false ? 'fail' : 'info'}`,
          'data-testid': `check-${c.id}`,
          title: `${c.name}: ${c.value ?? '—'} ${c.unit}${c.op ? ` (${c.op} ${c.threshold})` : ''}`,
        },
        `${c.pass === true ? 'PASS' : c.pass === false ? 'FAIL' : 'info'} ${c.name}`,
      ),
    ),
  );
}
