// Stage 3, lease: the call's lease, or how to answer its message without running it: a
// tombstone (canceled before pickup), a finished call (its card again), or an owner still
// running it (look again). Rejections take the lease too: a later valid call under the same id
// must find the failed result instead of running, and two copies of one call must not race.
// A pure tool's call takes no lease (define.ts): copies may run side by side, the card statement
// keeps one result, and it files the call canceled when a cancel was stored first. One that
// needs approval, or carries a decision, goes through the gate like any other, which takes it.
import type { Lease } from '@toolmesh/bus';
import { Header, RetryableError } from '@toolmesh/protocol';
import { metrics } from '@toolmesh/telemetry';
import type { ApprovalGate } from '../approvals.ts';
import { traced } from '../observe.ts';
import type { Skip } from '../resolve.ts';
import { failure } from '../takeover.ts';
import type { CallInHand, ServiceParts, Settled } from './context.ts';
import type { Bound, Intake, Rejection } from './intake.ts';

export async function leaseCall(
  parts: ServiceParts,
  c: CallInHand,
  accepted: Intake | Rejection,
  bound: Exclude<Bound | Rejection, Skip>,
  approvals: ApprovalGate | undefined,
): Promise<{ lease: Lease | undefined } | Settled> {
  const pure =
    accepted.ok &&
    !('ok' in bound) &&
    bound.tool.pure === true &&
    c.d.header(Header.approvalId) === undefined &&
    !(await (approvals?.required(c.ids) ?? Promise.resolve(false)));
  if (pure) return { lease: undefined };
  return takeLease(parts, c);
}

async function takeLease(parts: ServiceParts, c: CallInHand): Promise<{ lease: Lease } | Settled> {
  const { bus, limits, instanceId } = parts;
  const { d, ids, clog } = c;
  const key = bus.names.leaseKey(ids.project, ids.toolCallId);
  const got = await traced('lease', ids, () =>
    bus.leases().acquire(key, `${instanceId}:${d.streamSeq}`, limits.leaseTtlMs),
  );
  if (!got.acquired) {
    if (got.state === 'canceled') {
      // Canceled before any instance picked it up (the tombstone of cancel.ts). A copy of a
      // call that already has its card is answered with that card.
      const done = await parts.reemit(ids, clog);
      if (done) return { disposition: done };
      const reason = got.holder.reason ?? 'canceled by request';
      clog.info({ reason }, 'call canceled before it started; not run');
      return { disposition: await parts.finish(ids, failure('canceled', reason), undefined, clog) };
    }
    if (got.state === 'done') {
      const done = await parts.reemit(ids, clog);
      if (done) return { disposition: done };
      clog.error({ lease: got.holder }, 'lease says done but no card exists; retrying');
      throw new RetryableError(`lease of ${ids.toolCallId} is done but its card is missing`);
    }
    // The holder may have finished already (its lease lapses on its own): answer from the card.
    const done = await parts.reemit(ids, clog);
    if (done) return { disposition: done };
    if (c.lastDelivery) return { disposition: { type: 'ack' } }; // the holder acks its own message
    const delayMs = Math.min(Math.max(got.expiresInMs, 100), 2_000);
    clog.debug({ holder: got.holder.owner, delayMs }, 'call is running elsewhere; will look again');
    return { disposition: { type: 'nak', delayMs } };
  }
  if (got.lease.takeover) {
    // The previous owner may have written the card before its lease lapsed.
    const done = await parts.reemit(ids, clog);
    if (done) return { disposition: done };
    metrics.leaseTakeovers.inc({ service: parts.name });
    clog.warn('took over the lease of a stalled or crashed owner');
  }
  return { lease: got.lease };
}
