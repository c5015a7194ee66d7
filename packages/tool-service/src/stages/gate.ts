// Stage 4, gate: whether a bound call may run now. A call that needs a person's approval is
// parked (nothing held while they decide: the decision publishes it again) or filed refused; a
// non-idempotent call taken over from an owner that died mid-run is filed interrupted rather
// than run a second time (takeover.ts).
import type { Lease } from '@toolmesh/bus';
import type { ToolCall } from '@toolmesh/protocol';
import type { ApprovalGate } from '../approvals.ts';
import type { RunnableTool } from '../define.ts';
import { interruptedOnTakeover } from '../takeover.ts';
import { releasingOnError, type CallInHand, type ServiceParts, type Settled } from './context.ts';

export interface GateInput {
  approvals: ApprovalGate | undefined;
  lease: Lease | undefined;
  call: ToolCall;
  tool: RunnableTool;
}

/** Undefined when the call may go on; else how its message is settled. */
export async function gate(
  parts: ServiceParts,
  c: CallInHand,
  g: GateInput,
): Promise<Settled | undefined> {
  const { ids, clog } = c;
  const { approvals, lease, call } = g;
  if (approvals && lease) {
    const outcome = await releasingOnError(
      lease,
      approvals.check(c.d, ids, call, parts.argumentsOf(ids)),
    );
    if (outcome.kind === 'wait') {
      await lease.release().catch(() => undefined);
      clog.info(
        { approval_id: outcome.approval.approval_id, expires_at: outcome.approval.expires_at },
        outcome.parked ? 'call awaits approval' : 'call still awaits approval; acked',
      );
      return { disposition: { type: 'ack' } };
    }
    if (outcome.kind === 'refuse') {
      clog.info(
        { approval_id: outcome.approval.approval_id, code: outcome.content.error?.code },
        'call not approved; filed',
      );
      const metadata = {
        approval_id: outcome.approval.approval_id,
        after_execution: call.after_execution,
      };
      return { disposition: await parts.finish(ids, outcome.content, lease, clog, metadata) };
    }
    if (outcome.approval) clog.info({ approval_id: outcome.approval.approval_id }, 'call approved');
  }
  const interrupted = lease?.takeover ? interruptedOnTakeover(g.tool, call) : undefined;
  if (interrupted) {
    clog.warn('took over a non-idempotent call mid-run; filed interrupted, not run again');
    return { disposition: await parts.finish(ids, interrupted, lease, clog) };
  }
  return undefined;
}
