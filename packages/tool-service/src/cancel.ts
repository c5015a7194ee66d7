// Cancel requests reach every instance (a plain subscription, not a queue group): the one that
// runs the call aborts it, the others ignore the request.
import type { Logger } from 'pino';
import type { Bus } from '@toolmesh/bus';
import { decodeMessage } from '@toolmesh/protocol';
import { CancelReason } from './execute.ts';

export interface CancelRegistry {
  register(project: string, toolCallId: string, controller: AbortController): () => void;
  close(): void;
}

export function createCancelRegistry(bus: Bus, log: Logger): CancelRegistry {
  const running = new Map<string, AbortController>();
  const sub = bus.subscribe(bus.subjects.cancelFilter(), (subject, data) => {
    try {
      const parsed = bus.subjects.parse(subject);
      const req = decodeMessage('cancel', data);
      const ctl = running.get(`${parsed.project}/${req.tool_call_id}`);
      if (!ctl) return;
      log.info(
        { project: parsed.project, tool_call_id: req.tool_call_id, reason: req.reason },
        'canceling call',
      );
      ctl.abort(new CancelReason(req.reason ? `canceled: ${req.reason}` : 'canceled by request'));
    } catch (err) {
      log.warn({ err, subject }, 'ignoring a malformed cancel request');
    }
  });
  return {
    register: (project, toolCallId, controller) => {
      const key = `${project}/${toolCallId}`;
      running.set(key, controller);
      return () => {
        if (running.get(key) === controller) running.delete(key);
      };
    },
    close: () => sub.unsubscribe(),
  };
}
