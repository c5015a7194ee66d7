// Cancel requests, heard two ways. Live: every instance has a plain subscription (not a queue
// group), so the one running the call aborts it, and every instance remembers recent cancels of
// calls it is not running for a while. Durable: cancels are stored in the command stream (their
// subject is under `cmd.>`), and one durable consumer shared by every instance of every tool
// service turns each into a tombstone under the call's lease key. The call's own lease
// acquisition finds that tombstone, so a call canceled before any instance picked it up ends
// `canceled` without running, even on an instance started after the cancel was sent, at no cost
// to calls that were not canceled. An instance takes calls only once the stored cancels are
// tombstones, so a call waiting in the stream cannot overtake its own cancel.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Bus, Consumption, Delivery, Disposition } from '@toolmesh/bus';
import { decodeMessage, type CancelRequest } from '@toolmesh/protocol';
import { CancelReason } from './handler.ts';

export interface CancelRegistry {
  register(project: string, toolCallId: string, controller: AbortController): () => void;
  /**
   * Starts turning stored cancels into tombstones; resolves once those already stored are (or
   * after `catchUpMs`, with a warning, when the backlog does not drain).
   */
  start(opts: DurableCancelOptions): Promise<void>;
  close(graceMs?: number): Promise<void>;
}

export interface DurableCancelOptions {
  maxDeliver: number;
  retryBaseMs: number;
  retryMaxMs: number;
  catchUpMs?: number;
}

/** How long, and how many, cancels of calls not running here are remembered. */
const REMEMBER_MS = 15 * 60_000;
const REMEMBER_MAX = 10_000;
/** A tombstone write takes one or two KV round trips; a dead instance's are redelivered soon. */
const TOMBSTONE_ACK_WAIT_MS = 10_000;
const TOMBSTONE_CONCURRENCY = 8;
const CATCH_UP_MS = 10_000;

/** The error message a canceled call's result carries. */
export const cancelMessage = (req: CancelRequest): string =>
  req.reason ? `canceled: ${req.reason}` : 'canceled by request';

export function createCancelRegistry(
  bus: Bus,
  log: Logger,
  /** After a stored cancel's tombstone is written (a call parked for approval ends here). */
  onRecorded?: (project: string, toolCallId: string, reason: string) => Promise<void>,
): CancelRegistry {
  const running = new Map<string, AbortController>();
  // Insertion-ordered, so the oldest entries are the first to go.
  const recent = new Map<string, { reason: string; at: number }>();
  const remember = (key: string, reason: string) => {
    const now = Date.now();
    recent.delete(key);
    recent.set(key, { reason, at: now });
    for (const [k, v] of recent) {
      if (recent.size <= REMEMBER_MAX && now - v.at < REMEMBER_MS) break;
      recent.delete(k);
    }
  };
  const sub = bus.subscribe(bus.subjects.cancelFilter(), (subject, data) => {
    try {
      const parsed = bus.subjects.parse(subject);
      const req = decodeMessage('cancel', data);
      const key = `${parsed.project}/${req.tool_call_id}`;
      const reason = cancelMessage(req);
      const ctl = running.get(key);
      if (!ctl) {
        remember(key, reason);
        return;
      }
      log.info(
        { project: parsed.project, tool_call_id: req.tool_call_id, reason: req.reason },
        'canceling call',
      );
      ctl.abort(new CancelReason(reason));
    } catch (err) {
      log.warn({ err, subject }, 'ignoring a malformed cancel request');
    }
  });

  /** One stored cancel becomes a tombstone in the project's own key space (tenant-scoped). */
  async function tombstone(d: Delivery): Promise<Disposition> {
    let project: string;
    let req: CancelRequest;
    try {
      project = bus.subjects.parse(d.subject).project;
      req = decodeMessage('cancel', d.data);
    } catch (err) {
      return { type: 'term', reason: `malformed cancel request: ${(err as Error).message}` };
    }
    const key = bus.names.leaseKey(project, req.tool_call_id);
    const mark = await bus.leases().cancel(key, cancelMessage(req));
    log.debug({ project, tool_call_id: req.tool_call_id, mark }, 'cancel recorded');
    // A failure here is redelivered: the tombstone write is idempotent, and so is this.
    await onRecorded?.(project, req.tool_call_id, cancelMessage(req));
    return { type: 'ack' };
  }

  let durable: Consumption | undefined;
  return {
    register: (project, toolCallId, controller) => {
      const key = `${project}/${toolCallId}`;
      const earlier = recent.get(key);
      if (earlier && Date.now() - earlier.at < REMEMBER_MS) {
        recent.delete(key);
        controller.abort(new CancelReason(earlier.reason));
      }
      running.set(key, controller);
      return () => {
        if (running.get(key) === controller) running.delete(key);
      };
    },
    start: async (opts) => {
      durable = await bus.consumeProjects(
        {
          durable: bus.names.cancelConsumer,
          filter: (project) => bus.subjects.cancelFilter(project),
          ackWaitMs: TOMBSTONE_ACK_WAIT_MS,
          maxDeliver: opts.maxDeliver,
          maxAckPending: 1_000,
        },
        {
          concurrency: TOMBSTONE_CONCURRENCY,
          ackWaitMs: TOMBSTONE_ACK_WAIT_MS,
          retryBaseMs: opts.retryBaseMs,
          retryMaxMs: opts.retryMaxMs,
          handler: tombstone,
        },
      );
      const until = Date.now() + (opts.catchUpMs ?? CATCH_UP_MS);
      for (;;) {
        const left = await durable.backlog();
        if (left === 0) return;
        if (Date.now() >= until) {
          log.warn({ backlog: left }, 'stored cancels not all recorded yet; taking calls anyway');
          return;
        }
        await sleep(50);
      }
    },
    close: async (graceMs) => {
      sub.unsubscribe();
      await durable?.stop(graceMs);
    },
  };
}
