import { decisionTree, type DegradedAnswerDraft } from '../src/degraded/decision-tree.ts';
import type { DegradedContext, LlmAgentDefinition } from '../src/runtime/agent-definition.ts';

/*
 * The seeds' agents as code: what YAML cannot say. A scenario declares an agent's role, tier, chain and memory;
 * when an agent of the same name is here, its decision tree is attached (`scenarioAgents` does it), so with every
 * engine down it still gives a structured answer in its own voice (seed 003, layer 4) instead of a placeholder.
 */

/** What a round prompt says about its agenda item (see `src/runs/round-prompt.ts`). */
interface ItemFacts {
  readonly id?: string;
  readonly kind?: string;
  readonly title?: string;
}

const ITEM = /Agenda item ([A-Za-z0-9_-]+)(?: \(([^)]+)\))?: ([^\n]+?)\.?$/m;

/** Reads the agenda item out of a round prompt; cron work has none. */
export function itemOf(prompt: string): ItemFacts {
  const m = ITEM.exec(prompt);
  return m ? { id: m[1]!, ...(m[2] ? { kind: m[2] } : {}), title: m[3]! } : {};
}

type Rule = (c: DegradedContext, item: ItemFacts) => DegradedAnswerDraft;

/** A tree with one rule for urgent items, one for other agenda items, and one for anything else (cron work). */
function roleTree(role: string, urgent: Rule, agenda: Rule, other: Rule) {
  return decisionTree<DegradedContext>(
    [
      {
        name: `${role}: urgent item`,
        when: (c) => itemOf(c.prompt).kind === 'urgent',
        answer: (c) => urgent(c, itemOf(c.prompt)),
      },
      {
        name: `${role}: agenda item`,
        when: (c) => itemOf(c.prompt).id !== undefined,
        answer: (c) => agenda(c, itemOf(c.prompt)),
      },
    ],
    (c) => other(c, itemOf(c.prompt)),
  );
}

const label = (item: ItemFacts) => (item.id ? `${item.id} ${item.title ?? ''}`.trim() : 'this work');
const slot = (c: DegradedContext, name: string, fallback: string) => c.memory[name] ?? fallback;

/** Decision trees of the seed-003 ("Agent 8") and seed-000 (morning peak) agents, by agent name. */
export const SEED_DECISION_TREES: Readonly<Record<string, NonNullable<LlmAgentDefinition['decisionTree']>>> =
  Object.freeze({
    Kai: roleTree(
      'incident commander',
      (c, i) => ({
        summary: `${label(i)}: keep the current mitigation, owning team lead paged per "${slot(c, 'escalation', 'the escalation rule')}", re-check in 15 minutes.`,
        fields: {
          item: i.id,
          owner: 'owning team lead',
          action: 'hold mitigation and page',
          deadlineMinutes: 15,
        },
      }),
      (_c, i) => ({
        summary: `${label(i)}: defer to the next review; no owner change without analysis.`,
        fields: { item: i.id, action: 'defer' },
      }),
      () => ({
        summary: 'No new decision without analysis; current assignments stand.',
        fields: { action: 'hold' },
      }),
    ),
    Yuna: roleTree(
      'on-call SRE',
      (c, i) => ({
        summary: `${label(i)}: watch error rate and p99 against the SLO (${slot(c, 'slo', 'the SLO')}); roll back if either stays out of bounds for 10 minutes.`,
        fields: { item: i.id, metrics: ['error_rate', 'p99_latency'], rollbackAfterMinutes: 10 },
      }),
      (_c, i) => ({
        summary: `${label(i)}: define the proving metric before work starts.`,
        fields: { item: i.id, action: 'define metric' },
      }),
      () => ({ summary: 'Keep dashboards on the SLO burn rate.', fields: { action: 'monitor' } }),
    ),
    Miso: roleTree(
      'finance analyst',
      (c, i) => ({
        summary: `${label(i)}: treat as revenue-affecting until measured; budget guard "${slot(c, 'budget', 'the budget')}" stands.`,
        fields: { item: i.id, moneyAtRisk: 'unmeasured', budgetGuard: slot(c, 'budget', '') },
      }),
      (_c, i) => ({
        summary: `${label(i)}: cost estimate pending; no spend approved.`,
        fields: { item: i.id, approved: false },
      }),
      () => ({ summary: 'No spend change without an estimate.', fields: { approved: false } }),
    ),
    Dani: roleTree(
      'data engineer',
      (c, i) => ({
        summary: `${label(i)}: check backlog and freshness of ${slot(c, 'pipelines', 'the pipelines')}; pause non-critical consumers first.`,
        fields: { item: i.id, action: 'pause non-critical consumers' },
      }),
      (_c, i) => ({
        summary: `${label(i)}: needs a freshness requirement before design.`,
        fields: { item: i.id },
      }),
      () => ({ summary: 'Pipelines unchanged.', fields: { action: 'none' } }),
    ),
    Juno: roleTree(
      'security engineer',
      (c, i) => ({
        summary: `${label(i)}: contain first — restrict the affected credentials per "${slot(c, 'policy', 'least privilege')}", then investigate.`,
        fields: { item: i.id, action: 'contain', control: 'restrict credentials' },
      }),
      (_c, i) => ({
        summary: `${label(i)}: security review required before rollout.`,
        fields: { item: i.id, review: 'required' },
      }),
      () => ({ summary: 'No security-relevant change.', fields: {} }),
    ),
    Hana: roleTree(
      'customer communications',
      (c, i) => ({
        summary: `${label(i)}: post "We are investigating degraded service; next update in 30 minutes" on ${slot(c, 'channels', 'the status page')}.`,
        fields: { item: i.id, nextUpdateMinutes: 30 },
      }),
      (_c, i) => ({ summary: `${label(i)}: no customer message needed yet.`, fields: { item: i.id } }),
      () => ({ summary: 'No customer message.', fields: {} }),
    ),
    Rex: roleTree(
      'capacity planner',
      (c, i) => ({
        summary: `${label(i)}: shift load to the backup pool and keep 20 % headroom (${slot(c, 'quotas', 'current quotas')}).`,
        fields: { item: i.id, action: 'shift to backups', headroom: 0.2 },
      }),
      (_c, i) => ({
        summary: `${label(i)}: plan against current quotas; no commitments.`,
        fields: { item: i.id },
      }),
      () => ({ summary: 'Capacity unchanged.', fields: {} }),
    ),
    Andrew: roleTree(
      'release manager',
      (c, i) => ({
        summary: `${label(i)}: ${slot(c, 'freeze', 'freeze deploys')} — only fixes ship; roll back the last release if it is implicated.`,
        fields: { item: i.id, ships: 'fixes only', rollback: 'if implicated' },
      }),
      (_c, i) => ({
        summary: `${label(i)}: waits for the next release train.`,
        fields: { item: i.id, ships: false },
      }),
      () => ({ summary: 'Release train unchanged.', fields: {} }),
    ),
    'analyst-fundamental': roleTree(
      'fundamental analyst',
      cronAnalyst('fundamentals'),
      cronAnalyst('fundamentals'),
      cronAnalyst('fundamentals'),
    ),
    'analyst-macro': roleTree(
      'macro analyst',
      cronAnalyst('macro'),
      cronAnalyst('macro'),
      cronAnalyst('macro'),
    ),
    'analyst-technical': roleTree(
      'technical analyst',
      cronAnalyst('technicals'),
      cronAnalyst('technicals'),
      cronAnalyst('technicals'),
    ),
  });

/** Seed-000 analysts: with no engine, restate the last known view and flag that it is not refreshed. */
function cronAnalyst(area: string): Rule {
  return (c) => ({
    summary: `No refreshed ${area} view: engines unavailable (${c.reason}). The last published view stands; re-run this job when an engine is back.`,
    fields: { area, refreshed: false, work: c.prompt.slice(0, 120) },
  });
}
