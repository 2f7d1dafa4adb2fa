import { scrubSecrets, scrubValue } from '../redact/secret-scrubber.ts';
import type { AnswerCache } from './answer-cache.ts';
import type { DegradedAnswer } from '../core/turn.ts';
import type { DecisionTree } from './decision-tree.ts';

/** What the caller knows about the agent when it must answer degraded. */
export interface DegradedInput {
  /** The agent's memory slots. */
  readonly memory?: Readonly<Record<string, unknown>>;
  /** The work item being answered. Default: the prompt. */
  readonly item?: unknown;
}

/** What a decision tree sees: the caller's context plus the agent, the prompt and why it is degraded. */
export interface DegradedSituation extends DegradedInput {
  readonly agent: string;
  readonly prompt: string;
  readonly reason: string;
}

/** The keys the responder fills in itself. */
type SituationKey = 'agent' | 'prompt' | 'reason';

/** Answers for an agent that no engine can serve. */
export interface DegradedResponder<C extends DegradedInput = DegradedSituation> {
  /**
   * The best answer without an engine: an earlier answer of the same agent from the cache (exact or
   * similar), else the agent's decision tree, else a structured summary of its memory and the item.
   * `reason` says why the agent is degraded and is carried on the answer.
   */
  answer(agent: string, prompt: string, context: Omit<C, SituationKey>, reason: string): DegradedAnswer;
}

/** Options of {@link createDegradedResponder}. */
export interface DegradedResponderOptions<C extends DegradedInput> {
  /** Earlier good answers. Default: none. */
  readonly cache?: AnswerCache;
  /**
   * Per agent name, its decision tree. Read at answer time, so trees registered after creation count.
   * Default: none.
   */
  readonly trees?: Readonly<Record<string, DecisionTree<C>>>;
}

/** Longest rendering of one value in a generic summary. */
const MAX_VALUE_CHARS = 300;

/**
 * Creates the degraded layer's responder (seed 003, layer 4): never a placeholder such as "waiting
 * for backup engine", always something the agent actually knows, clearly marked by `source`.
 * Every answer is scrubbed of secrets and frozen.
 *
 * @example
 * ```ts
 * const responder = createDegradedResponder({ cache, trees: { Kai: kaiTree } });
 * const a = responder.answer('Kai', 'Hedge ratio for USD/KRW?', { memory: { desk: 'FX' } }, 'all engines open');
 * a.source; // 'cache' | 'decision_tree' | 'summary'
 * ```
 */
export function createDegradedResponder<C extends DegradedInput = DegradedSituation>(
  options: DegradedResponderOptions<C> = {},
): DegradedResponder<C> {
  const { cache, trees } = options;
  return {
    answer(agent, prompt, context, reason) {
      const hit = cache?.lookup(agent, prompt);
      if (hit) {
        return seal({
          summary: hit.answer,
          fields: {
            cachedPrompt: hit.prompt,
            similarity: hit.similarity,
            exact: hit.exact,
            ...(hit.at !== undefined ? { rememberedAt: hit.at } : {}),
          },
          source: 'cache',
          reason,
          basis: hit.exact
            ? 'earlier answer of this agent to the same prompt'
            : `earlier answer of this agent to a similar prompt: "${clip(hit.prompt, 120)}"`,
          similarity: hit.similarity,
        });
      }
      const tree = trees && Object.hasOwn(trees, agent) ? trees[agent] : undefined;
      let treeError: string | undefined;
      if (tree) {
        try {
          const result = tree({ ...context, agent, prompt, reason } as unknown as C);
          if (result && typeof result.summary === 'string' && result.summary.trim() !== '') {
            return seal({
              ...result,
              source: 'decision_tree',
              reason,
              basis:
                result.basis ?? (result.reason && result.reason !== reason ? result.reason : 'decision tree'),
            });
          }
          treeError = 'the decision tree returned no summary';
        } catch (e) {
          // A broken tree must not leave the agent without an answer: fall through to the summary.
          treeError = e instanceof Error ? e.message : String(e);
        }
      }
      return seal(summarize(agent, prompt, context, reason, treeError));
    },
  };
}

/** The generic structured summary: what the agent knows (memory slots) about the item. */
function summarize(
  agent: string,
  prompt: string,
  context: DegradedInput,
  reason: string,
  treeError: string | undefined,
): DegradedAnswer {
  const memory = context.memory ?? {};
  const item = context.item ?? prompt;
  const slots = Object.entries(memory).filter(([, v]) => v !== undefined && v !== null && v !== '');
  const lines = [
    `${agent} could not reach any engine (${reason}); this is a summary of what it knows, not a model answer.`,
    `Item: ${render(item)}`,
    slots.length > 0
      ? `What ${agent} knows:\n${slots.map(([k, v]) => `- ${k}: ${render(v)}`).join('\n')}`
      : `${agent} holds no memory slots about this item yet.`,
  ];
  return {
    summary: lines.join('\n'),
    fields: {
      agent,
      item,
      memory: Object.fromEntries(slots),
      ...(treeError !== undefined ? { treeError } : {}),
    },
    source: 'summary',
    reason,
    basis: slots.length > 0 ? `memory slots: ${slots.map(([k]) => k).join(', ')}` : 'the item only',
  };
}

/** One value as readable text: strings as they are, records by their title-like field, else JSON. */
function render(value: unknown): string {
  if (typeof value === 'string') return clip(value, MAX_VALUE_CHARS);
  if (value && typeof value === 'object' && !Array.isArray(value)) {
    const v = value as Record<string, unknown>;
    const title = ['title', 'name', 'summary', 'subject', 'id']
      .map((k) => v[k])
      .find((x) => typeof x === 'string');
    if (typeof title === 'string') return clip(title, MAX_VALUE_CHARS);
  }
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch {
    json = undefined;
  }
  return clip(json ?? String(value), MAX_VALUE_CHARS);
}

function clip(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

function seal(answer: DegradedAnswer): DegradedAnswer {
  const fields = answer.fields ? Object.freeze(scrubValue({ ...answer.fields })) : undefined;
  return Object.freeze({
    ...answer,
    summary: scrubSecrets(answer.summary),
    reason: scrubSecrets(answer.reason),
    ...(answer.basis !== undefined ? { basis: scrubSecrets(answer.basis) } : {}),
    ...(fields ? { fields } : {}),
  });
}
