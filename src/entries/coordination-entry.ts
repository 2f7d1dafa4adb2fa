/**
 * `breakwater/coordination`: several processes on one quota. The options `createSupervisor(config,
 * { coordination })` takes, and the errors a process that stops sending (fail closed) reports.
 *
 * @example
 * ```ts
 * import type { CoordinationOptions } from 'breakwater/coordination';
 * import { isCoordinationUnavailableError } from 'breakwater/coordination';
 * const coordination: CoordinationOptions = { backend: 'postgres', url: process.env.DATABASE_URL };
 * const supervisor = createSupervisor(config, { coordination });
 * ```
 */
export type { CoordinationBackendKind, CoordinationOptions } from '../coordination/coordination-options.ts';
export {
  CoordinationUnavailableError,
  isCoordinationUnavailableError,
  isLeaseFencedError,
  LeaseFencedError,
} from '../coordination/coordination-errors.ts';
