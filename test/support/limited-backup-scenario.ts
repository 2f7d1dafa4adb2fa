/**
 * The part after `endpoints:` that the wire-time scenarios share: one agent on the chain `limited → backup`, one
 * token, one round of one item. Each test writes its own header and endpoints in front of it.
 */
export const LIMITED_THEN_BACKUP = `  chains: { main: [limited, backup] }
  concurrency: { limit: 1 }
agents:
  - { name: Kai, chain: main, role: "You are Kai." }
rounds:
  count: 1
  items: [{ id: I1, title: Status of the payment API }]
`;
