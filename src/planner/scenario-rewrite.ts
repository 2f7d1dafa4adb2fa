import { isMap, isSeq, parseDocument, type YAMLMap } from 'yaml';
import { ConfigError } from '../core/errors/config-error.ts';
import type { PlanMove } from './plan-types.ts';

/** Options of {@link rewriteScenario}. */
export interface RewriteOptions {
  /** Names the file in errors. Default `scenario`. */
  readonly source?: string;
  /** The planned scenario's `name:`. Default: the original name with `-planned` appended. */
  readonly name?: string;
}

function jobNode(doc: ReturnType<typeof parseDocument>, job: string, source: string): YAMLMap {
  const jobs = doc.getIn(['schedule', 'jobs']);
  if (!isSeq(jobs))
    throw new ConfigError({
      source,
      path: 'schedule.jobs',
      message: 'is not a list; the plan cannot be written into it',
    });
  for (const item of jobs.items) {
    if (isMap(item) && item.get('name') === job) return item as YAMLMap;
  }
  throw new ConfigError({
    source,
    path: 'schedule.jobs',
    message: `has no job "${job}"; plan the same file you write`,
  });
}

/**
 * The scenario text with the plan's moves applied to `schedule.jobs` — a shift rewrites `cron`, a chain
 * move sets `chain`, a noAgent move sets `noAgent: true` — every comment and every other line kept,
 * and `name:` changed so runs of the two are told apart. Pure: the caller writes the file.
 *
 * @example
 * ```ts
 * const planned = rewriteScenario(readFileSync(file, 'utf8'), plan.proposal.moves);
 * writeFileSync('planned.yaml', planned);
 * ```
 */
export function rewriteScenario(
  text: string,
  moves: readonly PlanMove[],
  options: RewriteOptions = {},
): string {
  const source = options.source ?? 'scenario';
  const doc = parseDocument(text);
  if (doc.errors.length > 0)
    throw new ConfigError({
      source,
      path: '',
      message: `is not valid YAML: ${doc.errors[0]!.message.split('\n')[0]}`,
    });
  const name = doc.get('name');
  doc.set('name', options.name ?? `${typeof name === 'string' ? name : 'scenario'}-planned`);
  for (const m of moves) {
    const node = jobNode(doc, m.job, source);
    if (m.kind === 'shift') node.set('cron', m.to);
    else if (m.kind === 'chain') node.set('chain', m.to);
    else node.set('noAgent', true);
  }
  const summary = moves.map(
    (m) =>
      `${m.job} ${m.kind === 'shift' ? `${m.minutes! > 0 ? '+' : ''}${m.minutes} min` : m.kind === 'chain' ? `→ ${m.to}` : 'noAgent'}`,
  );
  doc.commentBefore = [
    ` Written by \`breakwater plan\`: ${moves.length} move${moves.length === 1 ? '' : 's'} to schedule.jobs`,
    ...summary.map((s) => `   ${s}`),
    ...(doc.commentBefore ? [doc.commentBefore] : []),
  ].join('\n');
  return doc.toString({ lineWidth: 0 });
}
