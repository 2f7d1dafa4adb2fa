/**
 * The degraded layer (seed 003, layer 4): when every engine is down and no BYOK key is set, agents
 * answer from earlier answers and precompiled decision trees — clearly marked, never a placeholder.
 */
export {
  type AnswerCacheData,
  type AnswerCacheOptions,
  AnswerCache,
  type CachedAnswer,
  type CacheHit,
  promptTokens,
  tokenSetCosine,
} from './answer-cache.ts';
export {
  type DecisionRule,
  type DecisionTree,
  type DegradedAnswer,
  type DegradedAnswerDraft,
  type DegradedSource,
  decisionTree,
} from './decision-tree.ts';
export {
  createDegradedResponder,
  type DegradedInput,
  type DegradedResponder,
  type DegradedResponderOptions,
  type DegradedSituation,
} from './degraded-responder.ts';
