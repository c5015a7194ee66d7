// skills.run_service: a long-running command (a server) started as an async task in a session
// sandbox, with each port of `expose_ports` forwarded to 127.0.0.1 on the host. The call waits
// until every port answers inside the sandbox, starts one host forwarder per port (see
// forwarders.ts), writes the endpoints into the task head and returns them. The task is then
// an ordinary task: task_status (which also says whether each endpoint still answers),
// task_watch and task_cancel. However the task ends, its forwarders are killed first.
import { setTimeout as sleep } from 'node:timers/promises';
import { netnsPidOf } from '@toolmesh/sandbox';
import { ToolError } from '@toolmesh/protocol';
import { RunServiceArgs } from '@toolmesh/skills';
import { defineTool, type ToolContext } from '@toolmesh/tool-service';
import type { SkillsDeps } from './deps.ts';
import { answersInside, startForwarder, tcpAnswers, type Forwarder } from './forwarders.ts';
import { startTask, type StartedTask } from './run-cmd-async.ts';
import type { TaskRegistry } from './tasks.ts';

const START_TIMEOUT_MS = 120_000;
/** How long the service has to listen on its ports unless the call says otherwise. */
const READY_TIMEOUT_MS = 30_000;

export function runServiceTool(deps: SkillsDeps, registry: TaskRegistry) {
  return defineTool({
    name: 'run_service',
    description:
      'Starts a long-running process in a sandbox session and returns a task id at once, with 127.0.0.1 endpoints for its exposed ports.',
    args: RunServiceArgs,
    timeoutMs: START_TIMEOUT_MS,
    handler: async (args, ctx) => {
      const { expose_ports: ports = [], ready_timeout_ms: readyMs, ...rest } = args;
      const started = await startTask(deps, registry, ctx, rest);
      const forwarders: Forwarder[] = [];
      let ended = false;
      const stopAll = async () => {
        ended = true;
        await Promise.all(forwarders.splice(0).map((f) => f.stop()));
      };
      started.task.onEnd = stopAll;
      try {
        if (ports.length === 0) return { ...started.result, endpoints: [] };
        const nsPid = await waitReady(
          started,
          ports,
          readyMs ?? READY_TIMEOUT_MS,
          ctx,
          () => ended,
        );
        for (const port of ports) {
          const f = await startForwarder(nsPid, port);
          forwarders.push(f);
          // The task ended while this one started: onEnd has already run.
          if (ended) await stopAll();
        }
        if (ended) throw serviceEnded(started);
        const endpoints = forwarders.map((f) => f.endpoint);
        await deps.store.skillTasks.setEndpoints(started.taskId, endpoints);
        ctx.logger.info({ task_id: started.taskId, endpoints }, 'service exposed');
        return { ...started.result, endpoints: endpoints.map(publicEndpoint) };
      } catch (err) {
        // A service nobody can reach is not left running.
        started.task.canceled = true;
        await started.task.kill().catch(() => undefined);
        await stopAll();
        await started.task.done;
        throw err;
      }
    },
  });
}

const serviceEnded = (s: StartedTask) =>
  new ToolError('the service ended before its ports answered', {
    details: { reason: 'service_ended', task_id: s.taskId },
  });

/** Waits until every port answers inside the service's network namespace; returns a pid in it. */
async function waitReady(
  s: StartedTask,
  ports: readonly number[],
  readyMs: number,
  ctx: ToolContext,
  ended: () => boolean,
): Promise<number> {
  const until = Math.min(Date.now() + readyMs, ctx.deadline - 5_000);
  let nsPid: number | undefined;
  const pending = new Set(ports);
  while (Date.now() < until) {
    if (ended()) throw serviceEnded(s);
    nsPid ??= await netnsPidOf(s.task.process.pid);
    if (nsPid !== undefined) {
      for (const p of [...pending]) if (await answersInside(nsPid, p)) pending.delete(p);
      if (pending.size === 0) return nsPid;
    }
    await sleep(100);
  }
  throw new ToolError(`the service did not listen on ports ${[...pending].join(', ')} in time`, {
    details: {
      reason: 'ports_not_ready',
      task_id: s.taskId,
      ports: [...pending],
      ready_timeout_ms: readyMs,
    },
  });
}

type StoredEndpoint = { port: number; host: string; host_port: number; url: string };

const publicEndpoint = (e: StoredEndpoint) => ({
  port: e.port,
  host: e.host,
  host_port: e.host_port,
  url: e.url,
});

/** A task's endpoints as task_status shows them: `active` when the host port still answers. */
export async function endpointsView(status: string, stored: readonly unknown[]) {
  return Promise.all(
    (stored as StoredEndpoint[]).map(async (e) => ({
      ...publicEndpoint(e),
      active: status === 'running' && (await tcpAnswers(e.host_port)),
    })),
  );
}
