/**
 * The `endpoint` label of an endpoint id. A BYOK key's endpoint (`byok:<session>:<template>:<fingerprint>`) is
 * one per user session and key: its label is `byok:<template>`, so the label set stays bounded by the config
 * and no session id (user data) becomes a label.
 */
export function endpointLabel(id: string): string {
  if (!id.startsWith('byok:')) return id;
  const parts = id.split(':');
  // The session id may itself hold colons: the template is the second-to-last part.
  return parts.length >= 4 ? `byok:${parts[parts.length - 2]}` : 'byok';
}
