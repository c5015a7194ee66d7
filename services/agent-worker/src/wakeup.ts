// The wakeup consumer's handler: a wakeup only says "look at this agent" (a task in its inbox, or
// a result that answered one of its turns); the inbox and the turns in Postgres say what to do, so a duplicate or stale wakeup finds nothing new and is
// acknowledged. A malformed one is terminated; a failure talking to Postgres is retried.
import type { Delivery, Disposition } from '@toolmesh/bus';
import { MeshError, decodeMessage, type Subjects } from '@toolmesh/protocol';
import type { Logger } from 'pino';
import type { Runner } from './runner.ts';

export function wakeupHandler(subjects: Subjects, runner: Runner, logger: Logger) {
  return async (d: Delivery): Promise<Disposition> => {
    let project: string;
    let agent: string;
    try {
      const parsed = subjects.parse(d.subject);
      if (parsed.kind !== 'cmd' || parsed.component !== 'agent')
        return { type: 'term', reason: `${d.subject} is not a wakeup subject` };
      const w = decodeMessage('wakeup', d.data);
      if (w.agent_id !== parsed.agent)
        return {
          type: 'term',
          reason: `wakeup for ${w.agent_id} on the subject of ${parsed.agent}`,
        };
      project = parsed.project;
      agent = parsed.agent;
      logger.debug(
        {
          project_id: project,
          agent_id: agent,
          reason: w.reason,
          correlation_id: w.correlation_id,
        },
        'wakeup',
      );
    } catch (err) {
      if (err instanceof MeshError) return { type: 'term', reason: err.message };
      throw err;
    }
    await runner.wake(project, agent);
    return { type: 'ack' };
  };
}
