import { formatDuration } from '../../clock/format-time.ts';
import { byId, h, setText, testid } from './page-dom.ts';
import { getJson } from './page-json.ts';
import { view } from './page-view.ts';
import { clockText } from './time-format.ts';

/* The runs page (a store and no run asked for): every run in the store, each with a link to its replay. */

export async function startIndex(): Promise<void> {
  view.mode = 'index';
  setText(testid('mode'), 'runs');
  byId('main').hidden = true;
  byId('runs-panel').hidden = false;
  const runs =
    await getJson<
      {
        runId: string;
        scenario: string;
        status: string;
        currentRound: number;
        totalRounds: number;
        createdAt: number;
        updatedAt: number;
        finishedAt: number | null;
        failure: string | null;
      }[]
    >('/api/runs');
  const table = testid('runs');
  table.replaceChildren(
    h(
      'tr',
      {},
      ...['run', 'status', 'scenario', 'started', 'duration', 'rounds', 'result', ''].map((c) =>
        h('th', {}, c),
      ),
    ),
  );
  for (const r of runs) {
    const end = r.finishedAt ?? r.updatedAt;
    const result =
      r.status === 'completed'
        ? `completed, ${r.totalRounds} rounds committed`
        : r.status === 'failed'
          ? `failed: ${r.failure ?? '?'}`
          : r.status === 'running'
            ? 'running'
            : `${r.status} after round ${r.currentRound}`;
    table.append(
      h(
        'tr',
        { 'data-testid': `run-${r.runId}`, 'data-status': r.status },
        h(
          'td',
          {},
          h('a', { href: `/?run=${encodeURIComponent(r.runId)}`, 'data-testid': 'run-open' }, r.runId),
        ),
        h('td', { 'data-testid': 'run-status-cell' }, r.status),
        h('td', {}, r.scenario),
        h('td', {}, clockText(r.createdAt)),
        h('td', {}, formatDuration(end - r.createdAt, 'spaced')),
        h('td', {}, `${r.currentRound} / ${r.totalRounds}`),
        h('td', { 'data-testid': 'run-result' }, result),
        h('td', {}, h('a', { href: `/?run=${encodeURIComponent(r.runId)}` }, 'replay')),
      ),
    );
  }
  if (runs.length === 0) table.append(h('tr', {}, h('td', {}, 'no runs in this store')));
}
