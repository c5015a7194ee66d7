// The agent worker against the scripted model and the builtin tools: what the model is shown,
// parallel calls, a call past its deadline, a stale result of an older epoch, 429s retried, a
// model error ending the turn, the step limit, streamed chunks, a tool the profile does not
// allow, a duplicate wakeup.
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  MsgId,
  createNames,
  createSubjects,
  decodeMessage,
  encodeMessage,
  type AgentChunk,
} from '@toolmesh/protocol';
import { startAgentMesh, type AgentMesh } from './support/agent-mesh.ts';
import { until } from './support/procs.ts';

let mesh: AgentMesh;
beforeAll(async () => {
  mesh = await startAgentMesh({ CG__AGENT__MAX_STEPS_PER_TURN: '3' });
  await mesh.startSkills();
  await mesh.startWorker();
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

const submit = (result: unknown) => ({
  toolCalls: [{ name: 'submit_result', arguments: { result } }],
});
const toolMessages = (agent: string, i: number) =>
  mesh.requestsOf(agent)[i]!.body.messages.filter((m) => m.role === 'tool');

describe('agent worker', () => {
  it('shows the model its prompt and tools, runs two calls in parallel, and resumes on both results', async () => {
    const agent = await mesh.createAgent({
      id: 'parallel',
      allowedTools: ['builtin.*'],
      script: [
        {
          text: 'echoing twice',
          toolCalls: [
            { name: 'builtin__echo', arguments: { n: 1 } },
            { name: 'builtin__echo', arguments: { n: 2 } },
          ],
        },
        submit('both echoed'),
      ],
    });
    const taskId = await mesh.startTask(agent, 'echo two things');
    const task = await mesh.finished(taskId);
    expect(task.status).toBe('succeeded');
    expect(task.final_card?.kind).toBe('final');
    expect(task.final_card?.content).toMatchObject({ status: 'succeeded', result: 'both echoed' });

    const [first, second] = mesh.requestsOf(agent);
    expect(first!.body.messages[0]).toMatchObject({ role: 'system' });
    expect(first!.body.messages[0]!.content).not.toContain('<available_skills>');
    expect(first!.body.messages[1]).toEqual({ role: 'user', content: 'echo two things' });
    expect(first!.body.tools!.map((t) => t.function.name).sort()).toEqual([
      'builtin__echo',
      'builtin__execute_python',
      'builtin__get_document',
      'builtin__list_files',
      'builtin__read_file',
      'builtin__search_documents',
      'builtin__sleep',
      'builtin__write_file',
      'submit_result',
    ]);
    expect(first!.body.stream).toBe(true);
    const assistant = second!.body.messages[2]!;
    expect(assistant.role).toBe('assistant');
    expect(assistant.tool_calls).toHaveLength(2);
    const results = toolMessages(agent, 1);
    expect(results.map((m) => m.tool_call_id)).toEqual(assistant.tool_calls!.map((c) => c.id));
    expect(results.map((m) => JSON.parse(m.content as string) as unknown)).toEqual([
      expect.objectContaining({ status: 'succeeded', result: { n: 1 } }),
      expect.objectContaining({ status: 'succeeded', result: { n: 2 } }),
    ]);

    const calls = (await mesh.cards()).filter((c) => c.kind === 'tool.call');
    expect(calls.filter((c) => c.metadata['task_id'] === taskId)).toHaveLength(2);
    // Both results were written by the tool service, one card per call.
    for (const c of assistant.tool_calls!)
      expect(await mesh.api.store.cards.countToolResults(mesh.project.id, c.id)).toBe(1);
    await until(() =>
      Promise.resolve(
        mesh.taskEvents().some((e) => e.task_id === taskId && e.status === 'succeeded')
          ? true
          : undefined,
      ),
    );
    const events = mesh.taskEvents().filter((e) => e.task_id === taskId);
    expect(events.map((e) => e.status)).toEqual(['running', 'succeeded']);
    expect(events[1]!.card_id).toBe(task.final_card!.card_id);
  });

  it('a tool past its deadline becomes a timeout result the model sees; a late result of the old epoch changes nothing', async () => {
    for (const [name, timeout_ms] of [
      ['ext.never', 300],
      ['ext.slow', 600_000],
    ] as const) {
      const res = await mesh.api.request('POST', `/v1/projects/${mesh.project.id}/tools`, {
        key: mesh.project.key,
        body: {
          name,
          description: 'served by nobody',
          parameters: { type: 'object' },
          options: { timeout_ms },
        },
      });
      expect(res.status, res.raw).toBe(201);
    }
    const agent = await mesh.createAgent({
      id: 'deadline',
      allowedTools: ['ext.*'],
      script: [
        { toolCalls: [{ name: 'ext__never', arguments: {} }] },
        { toolCalls: [{ name: 'ext__slow', arguments: {} }] },
        submit('gave up'),
      ],
    });
    const taskId = await mesh.startTask(agent, 'call the tool nobody serves');
    const store = mesh.api.store;
    const project = mesh.project.id;
    // Step 2 waits on ext.slow (epoch 2) after ext.never (epoch 1) timed out.
    const turn = await until(async () => {
      const t = await store.turns.byTask(project, taskId);
      return t?.status === 'waiting' && t.epoch === 2 ? t : undefined;
    });
    const calls = await store.turns.calls(turn.turn_id);
    expect(calls.map((c) => [c.tool_name, c.epoch, c.status])).toEqual([
      ['ext.never', 1, 'timeout'],
      ['ext.slow', 2, 'pending'],
    ]);
    const timedOut = toolMessages(agent, 1);
    expect(JSON.parse(timedOut[0]!.content as string)).toMatchObject({
      status: 'timeout',
      error: { code: 'timeout' },
    });

    // The old call answers late, carrying epoch 1: recorded, but the turn keeps waiting.
    const js = jetstream(mesh.nc);
    const subjects = createSubjects(mesh.api.config.nats.subject_root);
    const answer = async (toolCallId: string, toolName: string, epoch: number) => {
      await store.results.record({
        projectId: project,
        channel: 'main',
        toolCallId,
        toolName,
        target: 'ext',
        author: 'test',
        instanceId: 'test',
        content: { status: 'succeeded', result: { late: epoch === 1 }, duration_ms: 1 },
        agentId: agent,
        turnId: turn.turn_id,
        turnEpoch: epoch,
      });
      await js.publish(
        subjects.agentWakeup({ project, channel: 'main', agent }),
        encodeMessage('wakeup', {
          v: 1,
          agent_id: agent,
          reason: 'tool_result',
          correlation_id: toolCallId,
          turn_id: turn.turn_id,
          turn_epoch: epoch,
        }),
        { msgID: MsgId.wakeup(project, agent, toolCallId) },
      );
    };
    await answer(calls[0]!.tool_call_id, 'ext.never', 1);
    await until(async () => {
      const { rows } = await store.pool.query(
        `SELECT status FROM state.agent_inbox WHERE project_id = $1 AND correlation_id = $2`,
        [project, calls[0]!.tool_call_id],
      );
      return rows[0]?.status === 'done' ? true : undefined;
    });
    expect((await store.turns.get(project, turn.turn_id))?.status).toBe('waiting');
    expect(mesh.requestsOf(agent)).toHaveLength(2);

    await answer(calls[1]!.tool_call_id, 'ext.slow', 2);
    const task = await mesh.finished(taskId);
    expect(task.final_card?.content).toMatchObject({ result: 'gave up' });
    const shown = toolMessages(agent, 2).map((m) => JSON.parse(m.content as string) as unknown);
    expect(shown).toEqual([
      expect.objectContaining({ status: 'timeout' }),
      expect.objectContaining({ status: 'succeeded', result: { late: false } }),
    ]);
  });

  it('retries a model answering 429 twice, then succeeds', async () => {
    const agent = await mesh.createAgent({
      id: 'ratelimited',
      script: [{ error: { status: 429 } }, { error: { status: 429 } }, { text: 'all done' }],
    });
    const task = await mesh.finished(await mesh.startTask(agent, 'say done'));
    expect(task.status).toBe('succeeded');
    expect(task.final_card?.content).toMatchObject({ result: 'all done' });
    expect(mesh.requestsOf(agent)).toHaveLength(3);
  });

  it('a model error that is not retryable ends the turn with a failed final card saying why', async () => {
    const agent = await mesh.createAgent({
      id: 'badrequest',
      script: [{ error: { status: 400, message: 'context length exceeded' } }],
    });
    const task = await mesh.finished(await mesh.startTask(agent, 'anything'));
    expect(task.status).toBe('failed');
    expect(task.error).toMatchObject({ code: 'model_error' });
    expect(task.final_card?.content).toMatchObject({ status: 'failed' });
    expect(String(task.final_card?.content.text)).toContain('400');
    expect(String(task.final_card?.content.text)).toContain('context length exceeded');
    expect(mesh.requestsOf(agent)).toHaveLength(1);
  });

  it('a turn that keeps calling tools ends at the step limit', async () => {
    const echo = { toolCalls: [{ name: 'builtin__echo', arguments: { again: true } }] };
    const agent = await mesh.createAgent({
      id: 'looper',
      allowedTools: ['builtin.echo'],
      script: [echo, echo, echo, echo],
    });
    const task = await mesh.finished(await mesh.startTask(agent, 'loop'));
    expect(task.status).toBe('failed');
    expect(task.error).toMatchObject({ code: 'step_limit' });
    expect(String(task.final_card?.content.text)).toContain('all 3 steps');
    expect(mesh.requestsOf(agent)).toHaveLength(3);
  });

  it("streams the model's tokens on str.agent.<agent>.chunk", async () => {
    const agent = await mesh.createAgent({
      id: 'chatty',
      script: [{ text: 'tokens arrive as they are generated, in order' }],
    });
    const subjects = createSubjects(mesh.api.config.nats.subject_root);
    const chunks: AgentChunk[] = [];
    const sub = mesh.nc.subscribe(
      subjects.agentChunk({ project: mesh.project.id, channel: 'main', agent }),
      {
        callback: (_err, msg) => {
          chunks.push(decodeMessage('agent_chunk', msg.data));
        },
      },
    );
    await mesh.nc.flush();
    const task = await mesh.finished(await mesh.startTask(agent, 'talk'));
    const text = 'tokens arrive as they are generated, in order';
    expect(task.final_card?.content).toMatchObject({ result: text });
    const joined = () =>
      [...chunks]
        .sort((a, b) => a.seq - b.seq)
        .map((c) => c.delta)
        .join('');
    await until(() => Promise.resolve(joined() === text ? true : undefined));
    expect(chunks.length).toBeGreaterThan(1);
    expect(new Set(chunks.map((c) => c.turn_id)).size).toBe(1);
    sub.unsubscribe();
  });

  it('a tool the profile does not allow gets a clear error result, and is never called', async () => {
    const agent = await mesh.createAgent({
      id: 'restricted',
      allowedTools: ['builtin.echo'],
      script: [
        { toolCalls: [{ name: 'builtin__sleep', arguments: { ms: 1 } }] },
        submit('could not sleep'),
      ],
    });
    const taskId = await mesh.startTask(agent, 'sleep a little');
    const task = await mesh.finished(taskId);
    expect(task.status).toBe('succeeded');
    expect(mesh.requestsOf(agent)[0]!.body.tools!.map((t) => t.function.name)).toEqual([
      'builtin__echo',
      'submit_result',
    ]);
    const [refused] = toolMessages(agent, 1);
    const content = JSON.parse(refused!.content as string) as { error: { message: string } };
    expect(content).toMatchObject({ status: 'failed', error: { code: 'tool_not_allowed' } });
    expect(content.error.message).toContain('builtin.sleep is not allowed');
    const id = refused!.tool_call_id!;
    const { rows } = await mesh.api.store.pool.query(
      `SELECT 1 FROM state.tool_executions WHERE project_id = $1 AND tool_call_id = $2`,
      [mesh.project.id, id],
    );
    expect(rows).toHaveLength(0);
    expect((await mesh.api.store.cards.toolResult(mesh.project.id, id))?.author).toBe(
      `agent:${agent}`,
    );
  });

  it('a task whose wakeup was never published still runs: the scan finds its inbox row', async () => {
    const agent = await mesh.createAgent({ id: 'unwoken', script: [{ text: 'found anyway' }] });
    const store = mesh.api.store;
    // What the api writes before it publishes the wakeup, and nothing else.
    const taskId = await store.tx(async (tx) => {
      const t = await tx.tasks.create({
        projectId: mesh.project.id,
        agentId: agent,
        channel: 'main',
        input: 'nobody woke me',
      });
      await tx.inbox.addTask({
        projectId: mesh.project.id,
        agentId: agent,
        taskId: t!.task_id,
        payload: { channel: 'main' },
      });
      return t!.task_id;
    });
    const task = await mesh.finished(taskId);
    expect(task.final_card?.content).toMatchObject({ status: 'succeeded', result: 'found anyway' });
  });

  it('a step that keeps failing is not retried forever: the turn fails with internal_error', async () => {
    const agent = await mesh.createAgent({ id: 'poisoned', script: [{ text: 'never asked' }] });
    const store = mesh.api.store;
    const project = mesh.project.id;
    // A turn whose step already ran (and was lost) as often as allowed, due again.
    const task = await store.tasks.create({
      projectId: project,
      agentId: agent,
      channel: 'main',
      input: 'x',
    });
    await store.pool.query(`UPDATE state.tasks SET status = 'running' WHERE task_id = $1`, [
      task!.task_id,
    ]);
    await store.pool.query(
      `INSERT INTO state.turns (turn_id, project_id, agent_id, channel, task_id, claims)
       VALUES (gen_random_uuid(), $1, $2, 'main', $3, 5)`,
      [project, agent, task!.task_id],
    );
    const done = await mesh.finished(task!.task_id);
    expect(done.status).toBe('failed');
    expect(done.error).toMatchObject({ code: 'internal_error' });
    expect(String(done.final_card?.content.text)).toContain('5 times in a row');
    expect(mesh.requestsOf(agent)).toHaveLength(0);
  });

  it('a duplicate wakeup is processed once', async () => {
    const agent = await mesh.createAgent({
      id: 'twice',
      allowedTools: ['builtin.echo'],
      script: [{ toolCalls: [{ name: 'builtin__echo', arguments: { x: 1 } }] }, submit('once')],
    });
    const taskId = await mesh.startTask(agent, 'once please');
    // The same wakeup again under another message id, so JetStream does not drop it.
    const js = jetstream(mesh.nc);
    const subjects = createSubjects(mesh.api.config.nats.subject_root);
    const wakeup = encodeMessage('wakeup', {
      v: 1,
      agent_id: agent,
      reason: 'task',
      correlation_id: taskId,
    });
    for (const n of [1, 2, 3])
      await js.publish(
        subjects.agentWakeup({ project: mesh.project.id, channel: 'main', agent }),
        wakeup,
        { msgID: `dup-${taskId}-${n}` },
      );
    const task = await mesh.finished(taskId);
    expect(task.status).toBe('succeeded');
    // Every wakeup handled (none pending or unacked) before counting what they caused.
    const jsm = await jetstreamManager(mesh.nc);
    const names = createNames(mesh.api.config.nats.subject_root);
    await until(async () => {
      const info = await jsm.consumers.info(
        names.projectCommandStream(mesh.project.id),
        names.agentConsumer('worker'),
      );
      return info.num_pending === 0 && info.num_ack_pending === 0 ? true : undefined;
    });
    expect(mesh.requestsOf(agent)).toHaveLength(2);
    const finals = (await mesh.cards()).filter(
      (c) => c.kind === 'final' && c.metadata['task_id'] === taskId,
    );
    expect(finals).toHaveLength(1);
    const { rows } = await mesh.api.store.pool.query(
      `SELECT count(*)::int AS n FROM state.turns WHERE task_id = $1`,
      [taskId],
    );
    expect(rows[0].n).toBe(1);
  });
});
