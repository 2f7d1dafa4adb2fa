import { byokHint, type LiveAgent, type LiveEndpoint, type LiveModel } from './live-model.ts';
import { formatDuration } from '../clock/format-time.ts';

function bar(done: number, total: number, width = 20): string {
  const filled = total > 0 ? Math.min(width, Math.round((done / total) * width)) : 0;
  return `${'█'.repeat(filled)}${'░'.repeat(width - filled)}`;
}

function agentDetail(a: LiveAgent, now: number): string {
  const parts: string[] = [];
  if (a.noAgent) parts.push('plain code (no_agent)');
  else if (a.endpoint) parts.push(`via ${a.endpoint}`);
  if (a.worker) parts.push(`on ${a.worker}`);
  if (a.waitUntil !== undefined && a.waitUntil > now && (a.state === 'cooling' || a.state === 'queued'))
    parts.push(`waits ${formatDuration(a.waitUntil - now, 'short')}`);
  parts.push(`${a.turns} turn${a.turns === 1 ? '' : 's'}`);
  if (a.degraded > 0) parts.push(`${a.degraded} degraded`);
  if (a.failed > 0) parts.push(`${a.failed} failed`);
  return parts.join(', ');
}

function endpointHealth(e: LiveEndpoint, now: number): string {
  if (e.disabledUntil > now)
    return `disabled ${formatDuration(e.disabledUntil - now, 'short')} (${e.disabledReason ?? 'key'})`;
  if (e.creditOut) return 'out of credit';
  if (e.breaker === 'open')
    return e.openUntil !== null && e.openUntil > now
      ? `OPEN, probe in ${formatDuration(e.openUntil - now, 'short')}`
      : 'OPEN';
  if (e.breaker === 'halfOpen') return 'HALF-OPEN, probing';
  if (e.cooldownUntil > now) return `cooling ${formatDuration(e.cooldownUntil - now, 'short')}`;
  return 'healthy';
}

const fitWidth = (line: string, width: number) =>
  line.length > width ? `${line.slice(0, Math.max(0, width - 1))}…` : line;

/**
 * The terminal frame: a header with round and item progress and the concurrency tokens, one line per
 * agent (state, endpoint, wait, turns), one per endpoint (breaker, cooldown, credit, counts), and the
 * `/byok` line while an endpoint is out of credit. Every line fits in `width` columns.
 *
 * @example
 * ```ts
 * const lines = renderFrame(model, clock.now(), process.stdout.columns ?? 80);
 * ```
 */
export function renderFrame(model: LiveModel, now: number, width = 80): string[] {
  const lines: string[] = [];
  const title = [
    'breakwater',
    ...(model.title ? [model.title] : [model.scenario, model.runId ? `run ${model.runId}` : undefined]),
  ]
    .filter(Boolean)
    .join('  ');
  const p = model.progress;
  const progress = p
    ? `round ${p.round}/${p.rounds}  ${p.done}/${p.total} ${bar(p.done, p.total)} ${p.total > 0 ? Math.floor((p.done / p.total) * 100) : 0}%`
    : '';
  const t = model.tokens;
  const tokens = t ? `tokens ${t.held}/${t.limit}${t.queued > 0 ? ` (${t.queued} queued)` : ''}` : '';
  lines.push([title, progress, tokens].filter(Boolean).join('  '));
  const agents = [...model.agents.values()];
  const nameWidth = Math.max(5, ...agents.map((a) => a.name.length));
  lines.push('agents');
  const room = Math.max(20, width - 1);
  for (const a of agents) {
    const line = `  ${a.name.padEnd(nameWidth)}  ${(a.noAgent ? 'no_agent' : a.state).padEnd(9)}  ${agentDetail(a, now)}`;
    // A streamed turn's text as it grows: its end is what is new, so the line keeps the tail.
    const text = a.text?.replace(/\s+/g, ' ').trim();
    const left = room - line.length - 5;
    lines.push(
      text && left >= 10 ? `${line}  › ${text.length > left ? `…${text.slice(-(left - 1))}` : text}` : line,
    );
  }
  const endpoints = [...model.endpoints.values()];
  if (endpoints.length > 0) {
    const idWidth = Math.max(...endpoints.map((e) => e.id.length));
    const what = endpoints.map((e) => [e.provider, e.model].filter(Boolean).join('/'));
    const whatWidth = Math.max(...what.map((w) => w.length));
    lines.push('endpoints');
    endpoints.forEach((e, i) => {
      const counts = `ok ${e.ok}, 429 ${e.rateLimited}, faults ${e.faults}${e.inFlight ? `, ${e.inFlight} in flight` : ''}`;
      lines.push(
        `  ${e.id.padEnd(idWidth)}  ${what[i]!.padEnd(whatWidth)}  ${endpointHealth(e, now).padEnd(20)}  ${counts}`,
      );
    });
  }
  const byProvider = new Map<string, LiveEndpoint[]>();
  for (const e of model.creditOut(now))
    byProvider.set(e.provider ?? '', [...(byProvider.get(e.provider ?? '') ?? []), e]);
  for (const group of byProvider.values()) lines.push(byokHint(...group));
  return lines.map((l) => fitWidth(l.trimEnd(), Math.max(20, width - 1)));
}
