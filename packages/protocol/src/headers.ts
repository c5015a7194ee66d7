// Header names of the v1 protocol. NATS headers are case-sensitive on the wire; these are the
// exact spellings publishers must use.
export const Header = {
  agentId: 'CG-Agent-Id',
  turnId: 'CG-Turn-Id',
  turnEpoch: 'CG-Turn-Epoch',
  toolCallId: 'CG-Tool-Call-Id',
  traceId: 'CG-Trace-Id',
  // The bus credential (its id) a publisher connected with; checked against the project's.
  credentialId: 'CG-Credential-Id',
  traceparent: 'traceparent',
  // On a call published again after its approval was decided: the approval to read.
  approvalId: 'CG-Approval-Id',
  msgId: 'Nats-Msg-Id',
} as const;
export type Header = (typeof Header)[keyof typeof Header];
