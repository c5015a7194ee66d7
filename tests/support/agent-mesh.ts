// The api, a skills service and agent workers on one NATS root and database, with the scripted
// model server: what the agent tests need to start tasks and watch turns. Each agent gets a
// script of its own (the model's answers are picked by the agent named in the system prompt),
// so tests in one file cannot take each other's answers.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '@toolmesh/config';
import { decodeMessage, type AgentTaskEvent } from '@toolmesh/protocol';
import type { Card } from '@toolmesh/store';
import {
  startScriptedOpenAI,
  type RecordedChatRequest,
  type ScriptStep,
  type ScriptedOpenAI,
} from '@toolmesh/testing';
import { startAgentWorker, type AgentWorker } from '../../services/agent-worker/src/app.ts';
import { startSkillsMesh, type SkillsMesh } from './skills-mesh.ts';
import { until, spawnReady } from './procs.ts';

export interface AgentMesh extends SkillsMesh {
  model: ScriptedOpenAI;
  /** Environment of a worker of this mesh (api env + model + fast scans). */
  workerEnv: Record<string, string>;
  startWorker(extraEnv?: Record<string, string>): Promise<AgentWorker>;
  /** A worker as a child process (SIGKILL-able); resolves once it consumes wakeups. */
  spawnWorker(extraEnv?: Record<string, string>): Promise<ChildProcess>;
  /** Creates a profile and an agent using it; the model answers it from `script`. */
  createAgent(a: AgentSpec): Promise<string>;
  /** Requests the model got from this agent's turns, oldest first. */
  requestsOf(agentId: string): RecordedChatRequest[];
  startTask(agentId: string, input: unknown): Promise<string>;
  /** Polls the task over the api until it is finished. */
  finished(taskId: string, ms?: number): Promise<TaskView>;
  /** Every `evt.agent.*.task` event seen so far. */
  taskEvents(): AgentTaskEvent[];
  /** Cards of the project, oldest first. */
  cards(): Promise<Card[]>;
}

export interface AgentSpec {
  id: string;
  allowedTools?: string[];
  internalTools?: string[];
  systemPrompt?: string;
  script: ScriptStep[];
}

export interface TaskView {
  task_id: string;
  status: string;
  error: Record<string, unknown> | null;
  final_card: { card_id: string; kind: string; content: any } | null;
}

const MARK = /^You are agent ([A-Za-z0-9_-]+)\./;

function agentOf(req: RecordedChatRequest): string | undefined {
  const first = req.body.messages[0];
  return first?.role === 'system' && typeof first.content === 'string'
    ? MARK.exec(first.content)?.[1]
    : undefined;
}

export async function startAgentMesh(overrides: Record<string, string> = {}): Promise<AgentMesh> {
  const scripts = new Map<string, ScriptStep[]>();
  const model = await startScriptedOpenAI({
    fallback: (req) => {
      const agent = agentOf(req);
      const step = agent ? scripts.get(agent)?.shift() : undefined;
      if (!step)
        return { error: { status: 400, message: `no scripted answer left for ${agent ?? '?'}` } };
      return typeof step === 'function' ? step(req) : step;
    },
  });
  const mesh = await startSkillsMesh(overrides);
  const workerEnv: Record<string, string> = mesh.api.serviceEnv('agent-worker', {
    CG__LLM__BASE_URL: model.url,
    CG__LLM__API_KEY: 'sk-scripted',
    CG__LLM__RETRY_BASE_MS: '50',
    CG__LLM__RETRY_MAX_MS: '200',
    CG__AGENT__SCAN_INTERVAL_MS: '200',
    CG__AGENT__DEADLINE_GRACE_MS: '0',
    ...overrides,
  });
  const { id: project, key } = mesh.project;
  const events: AgentTaskEvent[] = [];
  const sub = mesh.nc.subscribe(
    `${mesh.api.config.nats.subject_root}.v1.${project}.*.evt.agent.*.task`,
    {
      callback: (_err, msg) => {
        events.push(decodeMessage('agent_task', msg.data));
      },
    },
  );
  const workers: AgentWorker[] = [];
  const children: ChildProcess[] = [];
  const call = async (method: 'GET' | 'POST', url: string, body?: unknown): Promise<unknown> => {
    const res = await mesh.api.request(method, `/v1/projects/${project}${url}`, { key, body });
    if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${res.raw}`);
    return res.body;
  };

  return {
    ...mesh,
    model,
    workerEnv,
    startWorker: async (extraEnv = {}) => {
      const env = { ...workerEnv, ...extraEnv };
      const w = await startAgentWorker(loadConfig({ env }), pino({ level: env['CG__LOG__LEVEL'] }));
      workers.push(w);
      return w;
    },
    spawnWorker: async (extraEnv = {}) => {
      const main = join(import.meta.dirname, '..', '..', 'services/agent-worker/src/main.ts');
      const child = await spawnReady(
        main,
        { ...workerEnv, CG__LOG__LEVEL: 'info', ...extraEnv },
        'agent worker started',
        'agent worker',
      );
      children.push(child);
      return child;
    },
    createAgent: async (a) => {
      scripts.set(a.id, [...a.script]);
      await call('POST', '/profiles', {
        name: `p-${a.id}`,
        allowed_tools: a.allowedTools ?? [],
        allowed_internal_tools: a.internalTools ?? ['submit_result'],
        system_prompt: `You are agent ${a.id}. ${a.systemPrompt ?? 'Do the task, then submit the result.'}`,
      });
      await call('POST', '/agents', { id: a.id, profile: `p-${a.id}` });
      return a.id;
    },
    requestsOf: (agentId) => model.requests().filter((r) => agentOf(r) === agentId),
    startTask: async (agentId, input) =>
      (
        (await call('POST', `/agents/${agentId}/tasks`, { input, channel: 'main' })) as {
          task_id: string;
        }
      ).task_id,
    finished: (taskId, ms = 30_000) =>
      until(async () => {
        const t = (await call('GET', `/tasks/${taskId}`)) as TaskView;
        return t.status === 'succeeded' || t.status === 'failed' ? t : undefined;
      }, ms),
    taskEvents: () => [...events],
    cards: async () =>
      (
        await mesh.api.store.pool.query<Card>(
          `SELECT * FROM cards WHERE project_id = $1 ORDER BY created_at, card_id`,
          [project],
        )
      ).rows,
    close: async () => {
      sub.unsubscribe();
      for (const c of children) {
        if (c.exitCode === null && c.signalCode === null) {
          c.kill('SIGKILL');
          await once(c, 'exit');
        }
      }
      for (const w of workers) await w.stop(5_000);
      await mesh.close();
      await model.stop();
    },
  };
}
