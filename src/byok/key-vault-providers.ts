import { ConfigError } from '../core/errors/config-error.ts';
import { byokTemplateName, type ResolvedByokTemplate } from './byok-template.ts';

const SOURCE = 'byok';

/** The key vault's provider names and the template each one names. */
export interface VaultProviders {
  /** Provider names the vault accepts, sorted. */
  readonly knownNames: () => string[];
  /** The template a typed provider name names (case-insensitive), else a `ConfigError` that does not echo it. */
  readonly templateOf: (providerName: unknown) => ResolvedByokTemplate;
}

/** The provider names of the vault's parsed templates. */
export function vaultProviders(templates: ReadonlyMap<string, ResolvedByokTemplate>): VaultProviders {
  const knownNames = () => [...templates.keys()].sort();

  // Never echo what was typed as the provider: it may be the key, typed first.
  const unknownProvider = (): ConfigError =>
    new ConfigError({
      source: SOURCE,
      path: 'provider',
      message: `the provider name is not a BYOK provider (what was typed is not shown); use one of ${knownNames().join(', ')}`,
    });

  const templateOf = (providerName: unknown): ResolvedByokTemplate => {
    const name = typeof providerName === 'string' ? byokTemplateName(providerName) : '';
    const template = templates.get(name);
    if (!template) throw unknownProvider();
    return template;
  };

  return { knownNames, templateOf };
}
