// Cancel requests reach every instance (a plain subscription, not a queue group): the one that
// runs the call aborts it. Every instance also remembers recent cancels for a while, so a call
// canceled while it still waited in the stream ends `canceled` when it arrives, without running.
import type { Logger } from 'pino';
import type { Bus } from '@toolmesh/bus';
import { decodeMessage } from '@toolmesh/protocol';
import { CancelReason } from './execute.ts';

export interface CancelRegistry {
  register(project: string, toolCallId: string, controller: AbortController): () => void;
  close(): void;
}

/** How long, and how many, cancels of calls not running here are remembered. */
const REMEMBER_MS = 15 * 60_000;
const REMEMBER_MAX = 10_000;

export function createCancelRegistry(bus: Bus, log: Logger): CancelRegistry {
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
      const reason = req.reason ? `canceled: ${req.reason}` : 'canceled by request';
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
    close: () => sub.unsubscribe(),
  };
}
