// What the execution detail offers to do to a call, through the api with the signed-in key:
// Cancel while it is queued, held or running; Approve or Deny (a reason is required) while it
// waits for approval; Re-run when it kept its arguments in full.
import { get, p, post } from '../api.ts';
import { actionButton } from '../actions.ts';
import { h } from '../dom.ts';
import type { Detail, Execution } from './executions.ts';

const ACTIVE = new Set(['queued', 'awaiting_approval', 'running']);

/** Arguments the execution kept in full (not a size marker), so it can run again. */
const complete = (a: Record<string, unknown> | null | undefined): boolean =>
  !!a && !('$truncated' in a) && !('$unstorable' in a);

/**
 * What can be done to the execution now, as buttons writing to `status`; `rerun` is handed the
 * new execution a Re-run started.
 */
export async function executionActions(
  e: Execution,
  status: HTMLElement,
  rerun: (started: Execution) => Promise<void>,
): Promise<HTMLElement[]> {
  const out: HTMLElement[] = [];
  const path = (rest: string) => p(`/executions/${encodeURIComponent(e.id)}${rest}`);
  if (ACTIVE.has(e.status)) {
    out.push(
      actionButton(
        'Cancel',
        'cancel',
        async () => {
          await post(path('/cancel'), { reason: 'canceled from the console' });
          return 'cancel sent; the call ends canceled';
        },
        status,
      ),
    );
  }
  if (e.status === 'awaiting_approval') {
    const { approvals } = await get<{
      approvals: { approval_id: string; tool_call_id: string }[];
    }>(p('/approvals?status=pending&limit=200')).catch(() => ({ approvals: [] }));
    const a = approvals.find((x) => x.tool_call_id === e.id);
    if (a) {
      const reason = h('input', {
        name: 'reason',
        placeholder: 'reason (required to deny)',
        'aria-label': 'reason',
      }) as HTMLInputElement;
      const decide = (d: 'approve' | 'deny') => async () => {
        const text = reason.value.trim();
        if (d === 'deny' && !text) throw new Error('give a reason to deny');
        await post(p(`/approvals/${a.approval_id}/${d}`), text ? { reason: text } : {});
        return d === 'approve' ? 'approved: the call runs' : 'denied';
      };
      out.push(
        reason,
        actionButton('Approve', 'approve', decide('approve'), status),
        actionButton('Deny', 'deny', decide('deny'), status),
      );
    }
  }
  if (complete(e.arguments)) {
    out.push(
      actionButton(
        'Re-run',
        'rerun',
        async () => {
          const r = await post<Detail>(path('/rerun'));
          await rerun(r.execution);
          return `re-run of ${e.id}`;
        },
        status,
      ),
    );
  }
  return out;
}
