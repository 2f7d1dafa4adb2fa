import type { Supervisor } from '../runtime/supervisor-types.ts';
import { BreakwaterLanguageModel, type BreakwaterModelSettings } from './breakwater-language-model.ts';

/**
 * `breakwater/ai-sdk`: a provider for the Vercel AI SDK (`ai` 6, `@ai-sdk/provider` 3, optional peer
 * dependencies). `generateText({ model: bw('premium') })` and `streamText` run through breakwater's tokens,
 * breakers, cooldowns, fallback chain and degraded layer; `result.providerMetadata.breakwater` says which
 * endpoint answered and which faults were met.
 * `streamText` streams the answer's deltas as they come (a restart on another endpoint withdraws the partial text).
 */
export { BreakwaterLanguageModel, type BreakwaterModelSettings } from './breakwater-language-model.ts';
export type { BreakwaterMetadata } from './breakwater-metadata.ts';
export {
  BreakwaterTurnFailedError,
  isBreakwaterTurnFailedError,
  isUnsupportedPromptError,
  UnsupportedPromptError,
} from './ai-sdk-errors.ts';

/**
 * A breakwater provider: call it with a chain's name to get that chain as an AI SDK language model.
 *
 * @example
 * ```ts
 * const bw: BreakwaterProvider = createBreakwater(supervisor);
 * bw('premium') === bw.languageModel('premium'); // false: a new model object, the same chain
 * ```
 */
export interface BreakwaterProvider {
  (chain: string, settings?: BreakwaterModelSettings): BreakwaterLanguageModel;
  /** The same as calling the provider. */
  languageModel(chain: string, settings?: BreakwaterModelSettings): BreakwaterLanguageModel;
}

/**
 * Creates the AI SDK provider over a running supervisor. Each model is one of the config's chains; `defaults`
 * apply to every model (a model's own settings win).
 *
 * @example
 * ```ts
 * import { generateText, streamText } from 'ai';
 * import { createSupervisor } from 'breakwater';
 * import { createBreakwater } from 'breakwater/ai-sdk';
 * const supervisor = createSupervisor(config);
 * const bw = createBreakwater(supervisor, { tier: 'analysis' });
 * const { text, providerMetadata } = await generateText({ model: bw('premium'), prompt: 'Summarize the night.' });
 * console.log(text, providerMetadata?.breakwater?.endpointId);
 * const stream = streamText({ model: bw('premium'), prompt: 'And now?' });
 * for await (const delta of stream.textStream) process.stdout.write(delta);
 * ```
 */
export function createBreakwater(
  supervisor: Supervisor,
  defaults: BreakwaterModelSettings = {},
): BreakwaterProvider {
  const languageModel = (chain: string, settings: BreakwaterModelSettings = {}) =>
    new BreakwaterLanguageModel(supervisor, chain, { ...defaults, ...settings });
  return Object.assign(languageModel, { languageModel });
}
