/**
 * Fault rules for any endpoint by id: a local proxy in front of a real base URL acts them out in the
 * provider's wire format and forwards every other call.
 *
 * @example
 * ```ts
 * import { startFaultProxy } from './fault-proxy/index.ts';
 * const proxy = await startFaultProxy({ upstream: 'https://api.openai.com/v1', endpoint: { id: 'oa', provider: 'openai' }, rules });
 * ```
 */
export {
  type EndpointFaultRule,
  endpointFaultRuleSchema,
  PROXY_FAULT_KINDS,
} from './endpoint-fault-rule.ts';
export { type ProxyFaultedEndpointsOptions, proxyFaultedEndpoints } from './endpoint-fault-proxies.ts';
export {
  type FaultProxy,
  type FaultProxyOptions,
  type FaultProxyStats,
  flavorOf,
  startFaultProxy,
} from './fault-proxy.ts';
