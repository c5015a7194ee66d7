// What the agent benchmarks share: a project with an `echoer` profile and `agents` agents on a
// running api, and `turn(i)`, which starts a task for agent i % agents and resolves when its
// task event says it ended (an agent runs its turns one after another: throughput comes from
// many agents).
import type { NatsConnection } from '@nats-io/transport-node';
import { createSubjects } from '@toolmesh/protocol';

export interface AgentWorld {
  turn: (i: number) => Promise<void>;
}

export async function agentWorld(o: {
  nc: NatsConnection;
  root: string;
  /** The api's base URL. */
  base: string;
  adminKey: string;
  agents: number;
}): Promise<AgentWorld> {
  const request = async <T>(key: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${o.base}${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
    return (await res.json()) as T;
  };
  const made = await request<{ key: { key: string } }>(o.adminKey, 'POST', '/v1/projects', {
    id: 'bench',
    name: 'bench',
  });
  const key = made.key.key;
  await request(key, 'POST', '/v1/projects/bench/profiles', {
    name: 'echoer',
    allowed_tools: ['builtin.*'],
    allowed_internal_tools: ['submit_result'],
    system_prompt: 'Echo, then submit.',
  });
  const agents = Array.from({ length: o.agents }, (_, i) => `echoer-${i}`);
  for (const id of agents) {
    await request(key, 'POST', '/v1/projects/bench/agents', { id, profile: 'echoer' });
  }
  // Task ends arrive as events; one may come before its start call has returned.
  const ended = new Map<string, string>();
  const waiting = new Map<string, (status: string) => void>();
  const subjects = createSubjects(o.root);
  for (const agent of agents) {
    o.nc.subscribe(
      subjects.agentEvent({ project: 'bench', channel: 'main', agent, event: 'task' }),
      {
        callback: (_err, m) => {
          const e = m.json<{ task_id: string; status: string }>();
          if (e.status !== 'succeeded' && e.status !== 'failed') return;
          const w = waiting.get(e.task_id);
          if (w) w(e.status);
          else ended.set(e.task_id, e.status);
        },
      },
    );
  }
  await o.nc.flush();
  return {
    turn: async (i) => {
      const { task_id: id } = await request<{ task_id: string }>(
        key,
        'POST',
        `/v1/projects/bench/agents/${agents[i % agents.length]}/tasks`,
        { input: 'echo', channel: 'main' },
      );
      const status =
        ended.get(id) ?? (await new Promise<string>((resolve) => waiting.set(id, resolve)));
      waiting.delete(id);
      ended.delete(id);
      if (status !== 'succeeded') throw new Error(`task ${id} ended ${status}`);
    },
  };
}
