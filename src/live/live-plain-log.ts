import type { RuntimeEvent } from '../core/runtime-event.ts';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import type { LiveProgress } from './live-model.ts';

/** Agent states that are the normal course of a turn; plain `notable` mode does not log entering them. */
const ROUTINE_STATES: ReadonlySet<string> = new Set(['idle', 'queued', 'calling', 'fallback', 'tools']);

/** The live view where nothing can be redrawn (a pipe, a CI log): stamped log lines. */
export interface LivePlainLog {
  /** Logs an event's lines, unless it is a routine state change and only `notable` lines are wanted. */
  event(event: RuntimeEvent, lines: readonly string[]): void;
  /** Logs the progress when it moved a step (10 % of a round; every turn in `all` detail). */
  progress(progress: LiveProgress): void;
}

/** Plain lines through `write`, each stamped by `stamp()` (the run-clock time since the first event). */
export function createLivePlainLog(
  write: (text: string) => void,
  detail: 'notable' | 'all',
  stamp: () => string,
): LivePlainLog {
  const isRoutine = (event: RuntimeEvent) =>
    event.type === 'agent.state' &&
    ROUTINE_STATES.has(event.data.state) &&
    ROUTINE_STATES.has(event.data.previous);
  const logLines = (lines: readonly string[]) => {
    for (const line of lines) write(`${stamp()} ${scrubSecrets(line)}\n`);
  };
  let lastProgress = '';

  return {
    event(event, lines) {
      if (detail === 'all' || !isRoutine(event)) logLines(lines);
    },
    progress(progress) {
      const step = progress.total > 0 ? Math.floor((progress.done * 10) / progress.total) : 10;
      const shown = detail === 'all' ? `${progress.done}` : `${step}`;
      const line = `round ${progress.round}/${progress.rounds}: ${progress.done}/${progress.total} done`;
      const key = `${progress.round}:${shown}`;
      if (key !== lastProgress) logLines([line]);
      lastProgress = key;
    },
  };
}
