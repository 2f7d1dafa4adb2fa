import type { Clock } from '../clock/clock.ts';
import type { AgentInfo, RuntimeEvent, RuntimeEventListener } from '../core/runtime-event.ts';
import { scrubSecrets } from '../redact/secret-scrubber.ts';
import { LiveModel, type LiveProgress } from './live-model.ts';
import { formatDuration } from '../clock/format-time.ts';
import { renderFrame } from './live-render.ts';
import { createLivePlainLog } from './live-plain-log.ts';
import { startLiveTerminal } from './live-terminal.ts';

/**
 * Where the live view reads the run from. A `Supervisor` fits as it is (events, agents, health,
 * tokens); so does a round runner's `TurnExecutor` (events, health) or any event feed.
 *
 * @example
 * ```ts
 * const source: LiveSource = { subscribeEvents: (l) => { listeners.add(l); return () => listeners.delete(l); } };
 * ```
 */
export interface LiveSource {
  subscribeEvents(listener: RuntimeEventListener): () => void;
  /** The agents running now. Optional. */
  agents?(): readonly { readonly name: string; readonly tier: string; state?(): string }[];
  /** Endpoint health (`EndpointHealth[]`), read at each redraw. Optional. */
  health?(): unknown;
  /** The token view (`{ limit, held, queue }`), read at each redraw. Optional. */
  tokens?(): unknown;
}

/**
 * The stream the view writes to (`process.stdout`, `process.stderr`, or a test double).
 *
 * @example
 * ```ts
 * const out: LiveStream = { isTTY: true, columns: 100, rows: 40, write: (s: string) => chunks.push(s) };
 * ```
 */
export interface LiveStream {
  write(chunk: string): unknown;
  readonly isTTY?: boolean;
  readonly columns?: number;
  readonly rows?: number;
}

/**
 * Options of {@link createLiveView}.
 *
 * @example
 * ```ts
 * createLiveView({ source: supervisor, out: process.stderr, clock: runClock });
 * ```
 */
export interface LiveViewOptions {
  /** The run's event feed (a `Supervisor`, a `TurnExecutor`, …). */
  readonly source: LiveSource;
  /** Agents to show before they do anything (names or `AgentInfo`). Default: the source's `agents()`. */
  readonly agents?: readonly (AgentInfo | string)[];
  /** Where to write. Default `process.stdout`. */
  readonly out?: LiveStream;
  /** Redraw in place (terminal) or write plain log lines. Default: `out.isTTY === true` and the terminal has a size. */
  readonly isTTY?: boolean;
  /** The run's clock, for countdowns (cooldowns, open breakers). Default: the time of the last event seen. */
  readonly clock?: Clock;
  /** At most this many terminal redraws per second. Default 10. */
  readonly maxRedrawsPerSecond?: number;
  /** Shown at the head of the frame (e.g. the scenario and run id). Default: from `run.started`, if seen. */
  readonly title?: string;
  /**
   * Plain mode only. `notable` (default): what a person reading a CI log wants — faults, cooling, fallback,
   * degraded, breaker changes, `/byok` hints, and progress every 10 % of a round. `all`: every agent state change
   * and every progress step.
   */
  readonly plainDetail?: 'notable' | 'all';
}

/**
 * A running live view.
 *
 * @example
 * ```ts
 * live.setProgress({ round: 1, rounds: 3, done: 4, total: 35 });
 * live.stop();
 * ```
 */
export interface LiveView {
  /** `tty`: one frame redrawn in place; `plain`: one log line per state change and progress step. */
  readonly mode: 'tty' | 'plain';
  /** Round and item progress (the round runner calls it after each turn). */
  setProgress(progress: LiveProgress): void;
  /**
   * A streamed run: `agent`'s running turn's text so far (`''` when it ended). On a terminal the agent's line
   * shows its tail, redrawn at the next tick; plain mode shows only the finished turns.
   */
  setText(agent: string, text: string): void;
  /**
   * Writes a line of your own without breaking the frame: on a terminal it goes above the frame and
   * stays in the scrollback; otherwise it is written as it is. Use it instead of writing to `out`.
   */
  log(line: string): void;
  /** Terminal mode: redraws now instead of at the next tick. Plain mode: nothing to do. */
  flush(): void;
  /** The terminal frame as it would be drawn now, one string per line. */
  frame(): string[];
  /** Unsubscribes, draws the last frame and leaves it on screen (cursor restored). Safe to call twice. */
  stop(): void;
}

/**
 * Shows a run while it runs. On a terminal: one line per agent with its state (idle, queued, calling,
 * fallback, tools, cooling, degraded), the round and item progress with the concurrency tokens, each
 * endpoint's health (breaker, cooldown, credit), and while an endpoint is out of credit a line saying
 * `/byok PROVIDER KEY` would let the agents go on — redrawn in place with log-update, at most
 * `maxRedrawsPerSecond` times a second. Elsewhere (a pipe, a CI log): plain lines, one per state
 * change and progress step, each stamped with the run-clock time since the first event.
 *
 * Write it to stderr when stdout carries machine output (`run --json`).
 *
 * @example
 * ```ts
 * const supervisor = createSupervisor(config, { clock });
 * const live = createLiveView({ source: supervisor, out: process.stderr, clock });
 * // … run the rounds, calling live.setProgress({ round, rounds, done, total }) after each turn …
 * live.stop();
 * ```
 */
export function createLiveView(options: LiveViewOptions): LiveView {
  const out = options.out ?? process.stdout;
  // A terminal that reports no size (some CI ptys) cannot be redrawn in place: log there instead.
  const sized = out.columns !== 0 && out.rows !== 0;
  const mode = (options.isTTY ?? (out.isTTY === true && sized)) ? 'tty' : 'plain';
  const model = new LiveModel();
  if (options.title) model.title = options.title;
  const { source } = options;
  let firstAt: number | undefined;
  let lastAt: number | undefined;
  const now = () => options.clock?.now() ?? lastAt ?? 0;

  for (const a of options.agents ?? []) model.addAgent(a);
  for (const a of source.agents?.() ?? []) {
    const agent = model.addAgent({ name: a.name, tier: a.tier });
    const state = a.state?.();
    if (state) agent.state = state;
  }

  const refresh = () => {
    try {
      model.applyHealth(source.health?.());
      model.applyTokens(source.tokens?.());
    } catch {
      // A source that is stopping may refuse; the last known state stays on screen.
    }
  };

  const write = (text: string) => {
    try {
      out.write(text);
    } catch {
      // A closed stream (EPIPE) must not stop the run.
    }
  };
  const stamp = () => `[+${formatDuration(Math.max(0, (lastAt ?? 0) - (firstAt ?? lastAt ?? 0)), 'short')}]`;
  const plain = createLivePlainLog(write, options.plainDetail ?? 'notable', stamp);

  const frame = () => {
    refresh();
    return renderFrame(model, now(), out.columns || 80).map((l) => scrubSecrets(l));
  };

  const terminal =
    mode === 'tty'
      ? startLiveTerminal(out as NodeJS.WriteStream, frame, options.maxRedrawsPerSecond ?? 10)
      : undefined;

  const onEvent = (event: RuntimeEvent) => {
    if (typeof event.at === 'number' && Number.isFinite(event.at)) {
      firstAt ??= event.at;
      lastAt = Math.max(lastAt ?? event.at, event.at);
    }
    const lines = model.apply(event);
    if (terminal) terminal.touch();
    else plain.event(event, lines);
  };
  const unsubscribe = source.subscribeEvents(onEvent);
  let stopped = false;
  terminal?.draw();

  return {
    mode,
    setProgress(progress) {
      if (stopped) return;
      model.progress = progress;
      if (terminal) terminal.touch();
      else plain.progress(progress);
    },
    setText(agent, text) {
      if (stopped || !terminal) return;
      const row = model.agents.get(agent);
      if (!row) return;
      if (text) row.text = text;
      else delete row.text;
      terminal.touch();
    },
    log(line) {
      const text = scrubSecrets(line);
      if (!terminal || stopped) write(`${text}\n`);
      else terminal.persist(text);
    },
    flush() {
      if (!stopped) terminal?.draw();
    },
    frame,
    stop() {
      if (stopped) return;
      stopped = true;
      unsubscribe();
      terminal?.stop();
    },
  };
}
