/**
 * The terminal live view of a running run: agents' states, progress, endpoint health, the `/byok` hint.
 *
 * @example
 * ```ts
 * import { createLiveView } from './live/index.ts';
 * const live = createLiveView({ source: supervisor, out: process.stderr, clock });
 * ```
 */
export {
  createLiveView,
  type LiveSource,
  type LiveStream,
  type LiveView,
  type LiveViewOptions,
} from './live-view.ts';
export { LiveModel, byokHint, type LiveAgent, type LiveEndpoint, type LiveProgress } from './live-model.ts';
export { renderFrame, shortDuration } from './live-render.ts';
