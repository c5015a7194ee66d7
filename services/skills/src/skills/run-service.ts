// skills.run_service: a long-running command (a server) started as an async task in a session
// sandbox, with each port of `expose_ports` forwarded to 127.0.0.1 on the host. The call waits
// until every port answers inside the sandbox, then starts one host forwarder per port behind a
// gate that wants the endpoint's bearer token (forwarders.ts, endpoint-gate.ts; neither needs
// root), on the service's own port when it is free on the host. It writes the endpoints into the
// task head without their tokens and returns them with the tokens. The task is then an ordinary
// task: task_status (which also says whether each endpoint still answers), task_watch and
// task_cancel. However the task ends, its forwarders are killed first. A provider that serves
// ports on hosts of its own (e2b's getHost) needs no forwarder: the call waits until the ports
// answer inside the sandbox and returns those hosts.
import { setTimeout as sleep } from 'node:timers/promises';
import { netnsPidOf } from '@toolmesh/sandbox';
import { ToolError } from '@toolmesh/protocol';
import { RunServiceArgs } from '@toolmesh/skills';
import { defineTool, type ToolContext } from '@toolmesh/tool-service';
import type { SkillsDeps } from './deps.ts';
import { startForwarder, tcpAnswers, waitListening, type Forwarder } from './forwarders.ts';
import { startTask, type StartedTask } from './run-cmd-async.ts';
import type { TaskRegistry } from './tasks.ts';

const START_TIMEOUT_MS = 120_000;
/** How long the service has to listen on its ports unless the call says otherwise. */
const READY_TIMEOUT_MS = 30_000;

export function runServiceTool(deps: SkillsDeps, registry: TaskRegistry) {
  return defineTool({
    name: 'run_service',
    description:
      'Starts a long-running process in a sandbox session and returns a task id at once, with endpoints for its exposed ports (127.0.0.1 forwarders locally, each needing its bearer token).',
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
        const remote = started.sandbox.endpointOf?.bind(started.sandbox);
        if (remote) {
          // A provider with its own public hosts per port (e2b): no host forwarders.
          await waitReadyRemote(started, ports, readyMs ?? READY_TIMEOUT_MS, ctx, () => ended);
          const endpoints = ports.map((port) => remoteEndpoint(port, remote(port)));
          await deps.store.skillTasks.setEndpoints(started.taskId, endpoints);
          ctx.logger.info({ task_id: started.taskId, endpoints }, 'service exposed');
          return { ...started.result, endpoints: endpoints.map(publicEndpoint) };
        }
        const nsPid = await waitReady(
          started,
          ports,
          readyMs ?? READY_TIMEOUT_MS,
          ctx,
          () => ended,
        );
        for (const port of ports) {
          const f = await startForwarder(nsPid, port, ctx.logger);
          forwarders.push(f);
          // The task ended while this one started: onEnd has already run.
          if (ended) await stopAll();
        }
        if (ended) throw serviceEnded(started);
        // The tokens go to the caller only: the head (and the log) keep everything else.
        const stored = forwarders.map(({ endpoint: { token: _token, ...rest } }) => rest);
        await deps.store.skillTasks.setEndpoints(started.taskId, stored);
        ctx.logger.info({ task_id: started.taskId, endpoints: stored }, 'service exposed');
        return {
          ...started.result,
          endpoints: forwarders.map((f) => ({
            ...publicEndpoint(f.endpoint),
            token: f.endpoint.token,
          })),
        };
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

const portsNotReady = (s: StartedTask, ports: readonly number[], readyMs: number) =>
  new ToolError(`the service did not listen on ports ${ports.join(', ')} in time`, {
    details: { reason: 'ports_not_ready', task_id: s.taskId, ports, ready_timeout_ms: readyMs },
  });

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
  while (nsPid === undefined) {
    if (ended()) throw serviceEnded(s);
    if (Date.now() >= until) throw portsNotReady(s, ports, readyMs);
    nsPid = await netnsPidOf(s.task.process.pid);
    if (nsPid === undefined) await sleep(100);
  }
  const stop = new AbortController();
  const watch = setInterval(() => {
    if (ended() || Date.now() >= until) stop.abort();
  }, 100);
  try {
    const pending = await waitListening(nsPid, ports, stop.signal).catch((err: unknown) => {
      // The host could not enter the sandbox's network (a kernel or policy refusing namespaces).
      throw new ToolError(`the sandbox's network could not be reached: ${(err as Error).message}`, {
        details: { reason: 'ports_unreachable', task_id: s.taskId, ports },
      });
    });
    if (pending.length === 0) return nsPid;
    if (ended()) throw serviceEnded(s);
    throw portsNotReady(s, pending, readyMs);
  } finally {
    clearInterval(watch);
  }
}

type StoredEndpoint = {
  port: number;
  host: string;
  host_port: number;
  /** A forwarder's host port is not the service's own (that one was busy, or privileged). */
  host_port_fallback?: boolean;
  url: string;
  /** Served by the provider's own host (e2b), not by a forwarder on this host. */
  remote?: boolean;
};

const remoteEndpoint = (port: number, host: string): StoredEndpoint => ({
  port,
  host,
  host_port: 443,
  url: `https://${host}`,
  remote: true,
});

/** Waits until every port accepts a connection inside the sandbox, asked from inside it. */
async function waitReadyRemote(
  s: StartedTask,
  ports: readonly number[],
  readyMs: number,
  ctx: ToolContext,
  ended: () => boolean,
): Promise<void> {
  const until = Math.min(Date.now() + readyMs, ctx.deadline - 5_000);
  // Ports travel as arguments, never as script text.
  const probe = 'for p; do (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || exit 1; done';
  while (Date.now() < until) {
    if (ended()) throw serviceEnded(s);
    const r = await s.sandbox.exec(
      { argv: ['bash', '-c', probe, 'probe', ...ports.map(String)] },
      { timeoutMs: 5_000 },
    );
    if (r.exitCode === 0) return;
    await sleep(200);
  }
  throw portsNotReady(s, ports, readyMs);
}

const publicEndpoint = (e: StoredEndpoint) => ({
  port: e.port,
  host: e.host,
  host_port: e.host_port,
  ...(e.host_port_fallback === undefined ? {} : { host_port_fallback: e.host_port_fallback }),
  url: e.url,
});

/** A task's endpoints as task_status shows them: `active` when the host port still answers. */
export async function endpointsView(status: string, stored: readonly unknown[]) {
  return Promise.all(
    (stored as StoredEndpoint[]).map(async (e) => ({
      ...publicEndpoint(e),
      active: status === 'running' && (e.remote === true || (await tcpAnswers(e.host_port))),
    })),
  );
}
