// The execution log of an agent's calls, through the api, the worker and the scripted model:
// each row keeps the call's arguments (capped) and the task and turn it was made for; history
// filters by agent, task and turn, and never reaches across projects. Retention (run by the
// sandbox-reaper daemon) deletes finished executions past their age with their cards, and keeps
// recent ones and running ones.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@toolmesh/config';
import { startReaperService } from '../services/sandbox-reaper/src/app.ts';
import { startAgentMesh, type AgentMesh } from './support/agent-mesh.ts';
import { until } from './support/procs.ts';

const ARGS_MAX = 300;
let mesh: AgentMesh;
beforeAll(async () => {
  mesh = await startAgentMesh({ CG__TOOLS__EXECUTION_ARGUMENTS_MAX_BYTES: String(ARGS_MAX) });
  await mesh.startSkills();
  await mesh.startWorker();
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

interface ExecutionView {
  id: string;
  tool: string;
  status: string;
  agent_id: string | null;
  task_id: string | null;
  turn_id: string | null;
  arguments: Record<string, unknown> | null;
  card_id: string | null;
}
interface Page {
  executions: ExecutionView[];
  total: number;
}

const history = async (query: string, key = mesh.project.key, project = mesh.project.id) => {
  const res = await mesh.api.request('GET', `/v1/projects/${project}/executions?${query}`, { key });
  return res;
};

/** Runs a task whose model echoes `args` once, then submits. */
async function echoTask(agentId: string, args: Record<string, unknown>) {
  const agent = await mesh.createAgent({
    id: agentId,
    allowedTools: ['builtin.echo'],
    script: [
      { toolCalls: [{ name: 'builtin__echo', arguments: args }] },
      { toolCalls: [{ name: 'submit_result', arguments: { result: 'ok' } }] },
    ],
  });
  const taskId = await mesh.startTask(agent, 'echo');
  const task = await mesh.finished(taskId);
  expect(task.status, JSON.stringify(task)).toBe('succeeded');
  const turn = await mesh.api.store.turns.byTask(mesh.project.id, taskId);
  return { taskId, turnId: turn!.turn_id };
}

describe('execution records of agent calls', () => {
  it('keep arguments, task and turn; history filters by agent, task and turn', async () => {
    const a = await echoTask('exec-a', { city: 'Lyon', n: 1 });
    const b = await echoTask('exec-b', { city: 'Oslo', n: 2 });

    const byTask = await history(`task=${a.taskId}`);
    expect(byTask.status, byTask.raw).toBe(200);
    const rows = (byTask.body as Page).executions;
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({
      tool: 'builtin.echo',
      status: 'succeeded',
      agent_id: 'exec-a',
      task_id: a.taskId,
      turn_id: a.turnId,
      arguments: { city: 'Lyon', n: 1 },
    });
    const byTurn = (await history(`turn=${b.turnId}`)).body as Page;
    expect(byTurn.executions.map((e) => e.arguments)).toEqual([{ city: 'Oslo', n: 2 }]);
    const byAgent = (await history('agent=exec-b')).body as Page;
    expect(byAgent.total).toBe(1);
    expect(byAgent.executions[0]!.task_id).toBe(b.taskId);
    // A filter on another agent's task and a bad id.
    expect(((await history(`agent=exec-a&task=${b.taskId}`)).body as Page).total).toBe(0);
    const bad = await history('task=not-a-uuid');
    expect(bad.status).toBe(400);
  });

  it('arguments over the cap are kept as a size marker', async () => {
    const big = 'x'.repeat(ARGS_MAX * 2);
    const { taskId } = await echoTask('exec-big', { big });
    const rows = ((await history(`task=${taskId}`)).body as Page).executions;
    const size = Buffer.byteLength(JSON.stringify({ big }));
    expect(rows[0]!.arguments).toEqual({
      $truncated: { size_bytes: size, limit_bytes: ARGS_MAX },
    });
    // The tool itself got all of them.
    const card = await mesh.api.store.cards.toolResult(mesh.project.id, rows[0]!.id);
    expect((card!.content as { result: { big: string } }).result.big).toHaveLength(ARGS_MAX * 2);
  });

  it("another project's key cannot read this project's history, nor find its tasks from its own", async () => {
    const { taskId } = await echoTask('exec-x', { n: 3 });
    const other = await mesh.api.createProject();
    const across = await history(`task=${taskId}`, other.key);
    expect(across.status).toBe(404);
    expect(across.raw).not.toContain(taskId);
    const own = await history(`task=${taskId}`, other.key, other.id);
    expect(own.status).toBe(200);
    expect((own.body as Page).total).toBe(0);
  });
});

describe('retention', () => {
  it('deletes finished executions past the age with their cards, in batches, and keeps the rest', async () => {
    const store = mesh.api.store;
    const project = mesh.project.id;
    const old1 = await echoTask('ret-old1', { n: 1 });
    const old2 = await echoTask('ret-old2', { n: 2 });
    const recent = await echoTask('ret-recent', { n: 3 });
    const idOf = async (taskId: string) =>
      ((await history(`task=${taskId}`)).body as Page).executions[0]!.id;
    const [id1, id2, idRecent] = (await Promise.all(
      [old1, old2, recent].map((t) => idOf(t.taskId)),
    )) as [string, string, string];
    // A call still running, finished long ago by the clock of its row: never deleted.
    await store.executions.start({
      projectId: project,
      toolCallId: 'ret-running',
      channel: 'main',
      toolName: 'builtin.sleep',
      target: 'builtin',
      instanceId: 'test',
    });
    // id1 finished before id2: batches go oldest first, so id2 gone means id1 went before it.
    await store.pool.query(
      `UPDATE state.tool_executions SET
         finished_at = now() - CASE WHEN tool_call_id = $3 THEN interval '4 hours' ELSE interval '3 hours' END,
         started_at = now() - interval '4 hours'
       WHERE project_id = $1 AND tool_call_id = ANY($2::text[])`,
      [project, [id1, id2, 'ret-running'], id1],
    );
    const cardsOf = async (id: string) =>
      (
        await store.pool.query<{ kind: string }>(
          `SELECT kind FROM cards WHERE project_id = $1 AND tool_call_id = $2 ORDER BY kind`,
          [project, id],
        )
      ).rows.map((r) => r.kind);
    expect(await cardsOf(id1)).toEqual(['tool.call', 'tool.result']);
    // Stored cancels of calls that never ran: one older than a copy of its call could still
    // arrive (the command stream keeps calls a day by default), one past the retention age but
    // not that old.
    await store.pool.query(
      `INSERT INTO state.call_cancels (project_id, tool_call_id, reason, created_at) VALUES
         ($1, 'ret-cancel-old', 'x', now() - interval '3 days'),
         ($1, 'ret-cancel-recent', 'x', now() - interval '3 hours')`,
      [project],
    );
    const cancels = async () =>
      (
        await store.pool.query<{ tool_call_id: string }>(
          `SELECT tool_call_id FROM state.call_cancels
           WHERE project_id = $1 AND tool_call_id LIKE 'ret-cancel-%' ORDER BY tool_call_id`,
          [project],
        )
      ).rows.map((r) => r.tool_call_id);

    const reaper = await startReaperService(
      loadConfig({
        env: mesh.api.serviceEnv('sandbox-reaper', {
          CG__REAPER__HEALTH_PORT: '0',
          CG__RETENTION__EXECUTIONS_MAX_AGE_HOURS: '1',
          // One row per batch: the two expired rows take two batches (and a third, empty).
          CG__RETENTION__BATCH_SIZE: '1',
          CG__RETENTION__INTERVAL_SEC: '3600',
        }),
      }),
      pino({ level: 'silent' }),
      { destroyers: new Map() },
    );
    try {
      await until(async () => ((await store.executions.get(project, id2)) ? undefined : true));
      await until(async () => ((await store.executions.get(project, id1)) ? undefined : true));
      expect(await cardsOf(id1)).toEqual([]);
      expect(await cardsOf(id2)).toEqual([]);
      // Recent and running rows stay, with their cards.
      expect((await store.executions.get(project, idRecent))?.status).toBe('succeeded');
      expect(await cardsOf(idRecent)).toEqual(['tool.call', 'tool.result']);
      expect((await store.executions.get(project, 'ret-running'))?.status).toBe('running');
      // The task's final card is not an execution's: the task still shows its answer.
      const task = await mesh.api.request('GET', `/v1/projects/${project}/tasks/${old1.taskId}`, {
        key: mesh.project.key,
      });
      expect(task.body).toMatchObject({ status: 'succeeded', final_card: { kind: 'final' } });
      await until(async () => ((await cancels()).length === 1 ? true : undefined));
      expect(await cancels()).toEqual(['ret-cancel-recent']);
      // A later pass finds nothing more to delete.
      expect(await reaper.retention.runPass()).toMatchObject({
        executions: 0,
        cards: 0,
        cancels: 0,
      });
    } finally {
      await reaper.stop();
    }
  });
});
