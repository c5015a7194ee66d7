// Waking an agent for a task filed in its inbox (a task, a thread's message). The inbox row is
// written first, so a wakeup that cannot be published loses nothing: the task waits for the
// agent's next wakeup or the worker's scan, and the answer says it was not woken.
import type { FastifyBaseLogger } from 'fastify';
import type { StreamPublisher } from '@toolmesh/stream-publish';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { Header, MsgId, WakeupReason, encodeMessage, type Subjects } from '@toolmesh/protocol';
import { SpanKind, traceHeaders, withSpan } from '@toolmesh/telemetry';

/** The wakeup's headers, with the current span's traceparent: the agent's steps join the trace. */
function wakeupHeaders(agent: string) {
  const h = natsHeaders();
  h.set(Header.agentId, agent);
  for (const [k, v] of Object.entries(traceHeaders())) h.set(k, v);
  return h;
}

/**
 * Publishes the agent's wakeup for a task; false (logged) when it could not be published. A
 * `started` wakeup is for a task whose turn was started here (a thread's next message, as the
 * turn before it was canceled): its own wakeup was spent when it was filed, and this one, under a
 * message id of its own, has the worker claim the started turn now rather than at its next scan.
 */
export async function wakeAgent(
  publisher: StreamPublisher,
  subjects: Subjects,
  w: { project: string; channel: string; agent: string; taskId: string; started?: boolean },
  log: FastifyBaseLogger,
): Promise<boolean> {
  const wakeup = encodeMessage('wakeup', {
    v: 1,
    agent_id: w.agent,
    reason: WakeupReason.task,
    correlation_id: w.taskId,
  });
  const subject = subjects.agentWakeup({ project: w.project, channel: w.channel, agent: w.agent });
  try {
    await withSpan(
      'cmd.agent publish',
      {
        kind: SpanKind.PRODUCER,
        attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject },
      },
      () =>
        publisher.publish(subject, wakeup, {
          msgId: MsgId.wakeup(w.project, w.agent, w.started ? `${w.taskId}/started` : w.taskId),
          headers: wakeupHeaders(w.agent),
        }),
    );
    return true;
  } catch (err) {
    log.warn({ err, task_id: w.taskId, agent_id: w.agent }, 'publishing a task wakeup failed');
    return false;
  }
}
