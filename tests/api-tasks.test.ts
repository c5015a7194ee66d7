// Tasks over HTTP: the task and its inbox row are written, then the agent's wakeup is published
// on its JetStream subject. And a bus that cannot take a tool call is a 503 that leaves no
// queued execution behind.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createBus } from '@toolmesh/bus';
import { Header, MsgId, createSubjects, decodeMessage, type Wakeup } from '@toolmesh/protocol';
import { startTestApi, type TestApi, expectError } from '../services/api/src/test/support.ts';

let api: TestApi;
let a: { id: string; key: string };
let b: { id: string; key: string };
beforeAll(async () => {
  api = await startTestApi();
  // The streams a tool service would provision: the wakeup is a JetStream publish.
  const { nats } = api.config;
  const bus = await createBus({
    nc: api.nc,
    root: nats.subject_root,
    logger: pino({ level: 'silent' }),
  });
  await bus.provision({
    cmdMaxAgeSec: nats.cmd_max_age_sec,
    evtMaxAgeSec: nats.evt_max_age_sec,
    dedupeWindowSec: nats.dedupe_window_sec,
    leaseBucketMaxAgeSec: nats.lease_bucket_max_age_sec,
  });
  a = await api.createProject();
  b = await api.createProject();
  // Straight into the table: these tests are about tasks, not the agents routes.
  await api.store.pool.query(
    `INSERT INTO resource.agents (project_id, agent_id, name) VALUES ($1, 'ada', 'Ada')`,
    [a.id],
  );
});
afterAll(async () => {
  await api?.close();
});

const start = (body: unknown, key = a.key, path = `/v1/projects/${a.id}/agents/ada/tasks`) =>
  api.request('POST', path, { key, body });

describe('tasks', () => {
  let taskId = '';

  it('starting a task files it in the inbox, then publishes the wakeup', async () => {
    const subjects = createSubjects(api.config.nats.subject_root);
    const woken: { wakeup: Wakeup; msgId: string | undefined }[] = [];
    // Watching as the admin user: the api may publish wakeups, never read them.
    const admin = await api.nats.connect('admin');
    const sub = admin.subscribe(
      subjects.agentWakeup({ project: a.id, channel: 'ops', agent: 'ada' }),
      {
        callback: (_err, msg) => {
          woken.push({
            wakeup: decodeMessage('wakeup', msg.data),
            msgId: msg.headers?.get(Header.msgId),
          });
        },
      },
    );
    await admin.flush();

    const res = await start({ input: 'summarise the quarter', channel: 'ops' });
    expect(res.status, res.raw).toBe(202);
    expect(res.body).toEqual({ task_id: expect.any(String), status: 'pending', woken: true });
    taskId = res.body.task_id;

    const inbox = await api.store.inbox.pending(a.id, 'ada');
    expect(inbox).toEqual([
      expect.objectContaining({
        message_type: 'task',
        correlation_id: taskId,
        payload: { channel: 'ops' },
      }),
    ]);
    for (let i = 0; i < 100 && woken.length === 0; i++) await new Promise((r) => setTimeout(r, 20));
    sub.unsubscribe();
    expect(woken).toEqual([
      {
        wakeup: { v: 1, agent_id: 'ada', reason: 'task', correlation_id: taskId },
        // The readable id, sealed with the api's key (protocol 5).
        msgId: expect.stringMatching(
          new RegExp(`^${MsgId.wakeup(a.id, 'ada', taskId)}/[A-Za-z0-9_-]{22}$`),
        ),
      },
    ]);
  });

  it('a started task reads back pending, without a final card yet', async () => {
    const res = await api.request('GET', `/v1/projects/${a.id}/tasks/${taskId}`, { key: a.key });
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({
      task_id: taskId,
      agent_id: 'ada',
      channel: 'ops',
      status: 'pending',
      input: 'summarise the quarter',
      error: null,
      final_card: null,
    });
  });

  it('structured input is kept as given; the channel defaults to api', async () => {
    const input = { goal: 'triage', items: [1, 2, 3] };
    const res = await start({ input });
    expect(res.status, res.raw).toBe(202);
    const task = await api.request('GET', `/v1/projects/${a.id}/tasks/${res.body.task_id}`, {
      key: a.key,
    });
    expect(task.body).toMatchObject({ input, channel: 'api' });
  });

  it('refuses unknown agents, unknown tasks and bad input', async () => {
    expectError(
      await start({ input: 'x' }, a.key, `/v1/projects/${a.id}/agents/nobody/tasks`),
      404,
      'not_found',
    );
    expectError(
      await api.request('GET', `/v1/projects/${a.id}/tasks/${crypto.randomUUID()}`, { key: a.key }),
      404,
      'not_found',
    );
    expectError(
      await api.request('GET', `/v1/projects/${a.id}/tasks/not-a-uuid`, { key: a.key }),
      400,
      'invalid_id',
    );
    expectError(await start({}), 400, 'invalid_request');
    expectError(await start({ input: '' }), 400, 'invalid_request');
    expectError(await start({ input: ['a', 'list'] }), 400, 'invalid_request');
    expectError(await start({ input: 'x'.repeat(70_000) }), 400, 'invalid_request');
    expectError(await start({ input: 'x', extra: true }), 400, 'invalid_request');
  });

  it("another project's key gets 404 for starting and reading tasks", async () => {
    expectError(await start({ input: 'sneaky' }, b.key), 404, 'not_found');
    expectError(
      await api.request('GET', `/v1/projects/${a.id}/tasks/${taskId}`, { key: b.key }),
      404,
      'not_found',
    );
    expectError(
      await api.request('GET', `/v1/projects/${b.id}/tasks/${taskId}`, { key: b.key }),
      404,
      'not_found',
    );
    expect(await api.store.inbox.pending(a.id, 'ada')).toHaveLength(2);
  });
});

describe('a bus that cannot take the call', () => {
  it('a project without its command stream gets it at its first call; a closed bus is 503 and the queued row is removed again', async () => {
    // A fresh root that nothing provisioned: the api makes the project's command stream when its
    // own publish finds none (docs/protocol.md, section 4).
    const bare = await startTestApi({}, { provision: false });
    try {
      const p = await bare.createProject();
      const taken = await bare.request('POST', `/v1/projects/${p.id}/executions`, {
        key: p.key,
        body: { tool: 'builtin.echo', wait: false },
      });
      expect(taken.status, taken.raw).toBe(202);
      const rows = async () =>
        (
          await bare.store.pool.query('SELECT 1 FROM state.tool_executions WHERE project_id = $1', [
            p.id,
          ])
        ).rowCount;
      expect(await rows()).toBe(1);

      await bare.store.pool.query(
        `INSERT INTO resource.agents (project_id, agent_id, name) VALUES ($1, 'ada', 'Ada')`,
        [p.id],
      );
      await bare.nc.close();
      for (const wait of [true, false]) {
        const closed = await bare.request('POST', `/v1/projects/${p.id}/executions`, {
          key: p.key,
          body: { tool: 'builtin.echo', wait },
        });
        expectError(closed, 503, 'unavailable');
      }
      expect(await rows()).toBe(1);

      // A task is kept even when its wakeup cannot be published; the answer says so.
      const task = await bare.request('POST', `/v1/projects/${p.id}/agents/ada/tasks`, {
        key: p.key,
        body: { input: 'x' },
      });
      expect(task.status, task.raw).toBe(202);
      expect(task.body).toMatchObject({ status: 'pending', woken: false });
      expect(await bare.store.inbox.pending(p.id, 'ada')).toHaveLength(1);
    } finally {
      await bare.close();
    }
  });
});
