// Deciding an approval from the api (its routes and the MCP facade's input requests): one
// conditional UPDATE of the pending row (store.approvals.decide: the first decision wins, on any
// instance), then the call message is published again with CG-Approval-Id so the tool service
// that serves it runs it or files its failed card. If this instance dies between the two, every
// tool service's approval scan publishes decided calls left unpublished.
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { decidedCallEnvelope } from '@toolmesh/protocol';
import { streamPublisher } from '@toolmesh/stream-publish';
import type { CallsStore, DecidedApproval, Decision } from '@toolmesh/store';

export interface DecideOutcome {
  /** False when the approval was already decided (or had expired): `approval` is that decision. */
  decided: boolean;
  approval: DecidedApproval;
}

export interface ApprovalDecider {
  decide(
    project: string,
    approvalId: string,
    decision: Decision,
    by: string,
    reason: string | undefined,
  ): Promise<DecideOutcome | undefined>;
}

export function createApprovalDecider(deps: {
  store: CallsStore;
  nc: NatsConnection;
  logger: Logger;
}): ApprovalDecider {
  const publisher = streamPublisher(deps.nc);
  const log = deps.logger.child({ component: 'approvals' });

  async function dispatch(a: DecidedApproval): Promise<void> {
    const envelope = decidedCallEnvelope(a);
    const h = natsHeaders();
    for (const [k, v] of Object.entries(envelope.headers)) h.set(k, v);
    await publisher.publish(envelope.subject, envelope.data, {
      headers: h,
      msgId: envelope.msgID,
    });
    await deps.store.approvals.markDispatched(a.approval_id);
  }

  return {
    decide: async (project, approvalId, decision, by, reason) => {
      const out = await deps.store.approvals.decide(project, approvalId, decision, by, reason);
      if (!out) return undefined;
      const a = out.record;
      // A decision taken here (or a timeout this request found) is published at once; a repeat
      // of an earlier decision publishes again only if that one never went out.
      if (a.status !== 'pending' && a.dispatched_at === null) {
        await dispatch(a).catch((err: unknown) =>
          log.warn(
            { err, project, approval_id: approvalId },
            'decided call not published; the approval scan will',
          ),
        );
      }
      log.info(
        { project, approval_id: approvalId, status: a.status, by: a.decided_by, new: out.decided },
        'approval decided',
      );
      return { decided: out.decided, approval: a };
    },
  };
}
