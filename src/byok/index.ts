/**
 * Runtime BYOK ("bring your own key"): when the platform's credit is gone, a user types
 * `/byok PROVIDER KEY` and that session's agents carry on with their own key, kept encrypted in
 * memory, bound to the session, and gone after 2 h without use.
 *
 * @example
 * ```ts
 * import { createKeyVault, parseByokCommand } from './byok/index.ts';
 * const vault = createKeyVault({ templates: { openai: { provider: 'openai', model: 'gpt-4o-mini' } } });
 * const cmd = parseByokCommand(line);
 * if (cmd) console.log(await vault.inject(sessionId, cmd.provider, cmd.key));
 * ```
 */
export {
  BYOK_USAGE,
  type ByokCommand,
  type ByokLine,
  parseByokCommand,
  parseByokLine,
} from './byok-command.ts';
export { openCommandInput } from './command-input.ts';
export {
  type ByokConsole,
  type ByokConsoleInput,
  type ByokConsoleOptions,
  type ByokConsoleTarget,
  canReadCommands,
  startByokConsole,
} from './byok-console.ts';
export {
  ByokRejectedError,
  ByokVaultClosedError,
  isByokRejectedError,
  isByokVaultClosedError,
} from './byok-errors.ts';
export type {
  ByokExpiryReason,
  ByokListener,
  ByokReceipt,
  ByokTemplate,
  ProviderName,
} from './byok-types.ts';
export {
  createKeyVault,
  DEFAULT_BYOK_IDLE_TTL_MS,
  type InjectOptions,
  type KeyVault,
  type KeyVaultOptions,
} from './key-vault.ts';
