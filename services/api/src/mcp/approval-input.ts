// Approvals asked of the MCP client that made the call, in its revision's own input mechanism:
// on a 2025-era session whose client declared `elicitation`, an elicitation request sent while
// the call waits; on 2026-07-28, a task of such a call is `input_required` with the same
// elicitation as an input request, answered with tasks/update; a plain 2026-07-28 tools/call is
// answered input_required with it, and its re-send carries the answer (modern-approval.ts). Each
// answer decides the approval like the api's routes do (approvals.ts): one conditional update,
// first one wins. A 2025 client or a task that cancels the prompt decides nothing: the call keeps
// waiting for someone else (the re-sent request treats a cancel as a denial).
import type { ApprovalRecord } from '@toolmesh/store';
import type { ApprovalDecider } from '../approvals.ts';

/** The form a person fills in: approve or not, and why. */
export const APPROVAL_FORM = {
  type: 'object',
  properties: {
    approve: {
      type: 'boolean',
      title: 'Approve',
      description: 'true runs the call once; false denies it',
    },
    reason: { type: 'string', title: 'Reason', description: 'why (required to deny)' },
  },
  required: ['approve'],
} as const;

export interface ElicitParams {
  mode: 'form';
  message: string;
  requestedSchema: typeof APPROVAL_FORM;
  _meta: Record<string, unknown>;
}

export function approvalElicitation(a: ApprovalRecord): ElicitParams {
  return {
    mode: 'form',
    message: `${a.tool_name} needs your approval before it runs, with arguments ${JSON.stringify(a.arguments)}. Without a decision by ${a.expires_at.toISOString()} it fails approval_timeout.`,
    requestedSchema: APPROVAL_FORM,
    _meta: { 'io.toolmesh/approval-id': a.approval_id, 'io.toolmesh/tool-call-id': a.tool_call_id },
  };
}

export interface ElicitAnswer {
  action: 'accept' | 'decline' | 'cancel';
  content?: Record<string, unknown> | undefined;
}

/** Applies an answer: accept with approve → approved; accept without it or decline → denied. */
export async function applyAnswer(
  decider: ApprovalDecider,
  a: Pick<ApprovalRecord, 'project_id' | 'approval_id'>,
  caller: string,
  answer: ElicitAnswer,
): Promise<void> {
  if (answer.action === 'cancel') return;
  const said = answer.content?.['reason'];
  const reason = typeof said === 'string' && said.trim() !== '' ? said.trim() : undefined;
  const approve = answer.action === 'accept' && answer.content?.['approve'] === true;
  await decider.decide(
    a.project_id,
    a.approval_id,
    approve ? 'approved' : 'denied',
    caller,
    reason ?? (approve ? undefined : 'declined by the MCP client'),
  );
}
