// Threads through the api, the agent worker and the scripted model: a conversation whose later
// answers need its earlier messages (the model can only answer from what its prompt holds), the
// order of messages sent while a turn runs, a worker killed mid-turn, another project refused
// on every route, the queue limit (the CLI: threads-cli.test.ts).
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgentMesh, type AgentMesh } from './support/agent-mesh.ts';
import { until } from './support/procs.ts';
import { plusOne, threadApi, userTexts, type Turn } from './support/threads.ts';

let mesh: AgentMesh;
beforeAll(async () => {
  mesh = await startAgentMesh({
    CG__AGENT__LEASE_TTL_MS: '1500',
    CG__AGENT__THREAD_QUEUE_MAX: '3',
  });
  await mesh.startSkills();
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

/**
 * The in-process worker the tests share, started on first use: the crash test (first in the
 * file) must let its doomed child worker pick its turn up before any other worker runs.
 */
let shared: ReturnType<AgentMesh['startWorker']> | undefined;
const worker = () => (shared ??= mesh.startWorker({ CG__SERVICE__INSTANCE_ID: 'rescuer' }));

const { api, show, openThread, say, answered } = threadApi(() => mesh);

describe('threads', { timeout: 120_000 }, () => {
  it(
    'a worker killed mid-turn: another finishes the turn, and the history holds it once',
    { timeout: 180_000 },
    async () => {
      const agent = await mesh.createAgent({
        id: 'phoenix',
        allowedTools: ['builtin.echo'],
        script: [
          { toolCalls: [{ name: 'builtin__echo', arguments: { before: 'the crash' } }] },
          // The first instance dies while waiting for this answer.
          { delayMs: 60_000, text: 'never delivered' },
          { toolCalls: [{ name: 'submit_result', arguments: { result: 'survived' } }] },
          (req) => ({ text: `history: ${userTexts(req).join(' | ')}` }),
        ],
      });
      const first = await mesh.spawnWorker({ CG__SERVICE__INSTANCE_ID: 'doomed' });
      const thread = await openThread(agent);
      const sent = await say(agent, thread, 'survive a crash');
      await until(() => Promise.resolve(mesh.requestsOf(agent).length === 2 ? true : undefined));
      expect(await mesh.api.store.turns.byTask(mesh.project.id, sent.task_id)).toMatchObject({
        status: 'running',
        run_owner: 'doomed',
      });
      // Sent while the doomed worker holds the turn: it waits through the crash.
      await say(agent, thread, 'and then?');
      first.kill('SIGKILL');
      await once(first, 'exit');

      await worker();
      const second = await answered(agent, thread, 2);
      expect(second.final_card?.content.result).toBe('history: survive a crash | and then?');

      const requests = mesh.requestsOf(agent);
      expect(requests).toHaveLength(4);
      // The second turn's prompt holds the first turn once: one call, one result, one answer.
      const prompt = requests[3]!.body.messages.slice(1);
      expect(prompt.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'assistant', 'user']);
      expect(prompt[3]).toEqual({ role: 'assistant', content: 'survived' });
      const view = await show(agent, thread);
      expect(view.turns).toHaveLength(2);
      expect(view.turns[0]!.cards.map((c) => c.kind)).toEqual([
        'message',
        'message',
        'tool.call',
        'tool.result',
        'final',
      ]);
    },
  );

  it('a three-message conversation: the third answer needs the first message', async () => {
    await worker();
    const agent = await mesh.createAgent({
      id: 'talker',
      allowedTools: ['builtin.echo'],
      script: [
        { text: 'Noted: 41.' },
        { toolCalls: [{ name: 'builtin__echo', arguments: { word: 'banana' } }] },
        { toolCalls: [{ name: 'submit_result', arguments: { result: 'banana echoed' } }] },
        plusOne,
      ],
    });
    const thread = await openThread(agent);
    expect((await say(agent, thread, 'My secret number is 41.')).seq).toBe(1);
    expect((await answered(agent, thread, 1)).final_card?.content).toMatchObject({
      result: 'Noted: 41.',
    });
    expect((await say(agent, thread, 'Echo banana for me.')).seq).toBe(2);
    await answered(agent, thread, 2);
    expect((await say(agent, thread, 'What is my secret number plus one?')).seq).toBe(3);
    const third = await answered(agent, thread, 3);
    expect(third.status).toBe('succeeded');
    expect(third.final_card?.content).toMatchObject({ result: '42' });

    // What the model was shown for the third message: the whole conversation, in order.
    const requests = mesh.requestsOf(agent);
    expect(requests).toHaveLength(4);
    const last = requests[3]!.body.messages;
    expect(last[0]!.role).toBe('system');
    const toolCall = last.find((m) => m.role === 'assistant' && 'tool_calls' in m && m.tool_calls);
    const callId = (toolCall as { tool_calls: { id: string }[] }).tool_calls[0]!.id;
    expect(last.slice(1)).toEqual([
      { role: 'user', content: 'My secret number is 41.' },
      { role: 'assistant', content: 'Noted: 41.' },
      { role: 'user', content: 'Echo banana for me.' },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: callId,
            type: 'function',
            function: { name: 'builtin__echo', arguments: '{"word":"banana"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: callId, content: expect.stringContaining('"banana"') },
      { role: 'assistant', content: 'banana echoed' },
      { role: 'user', content: 'What is my secret number plus one?' },
    ]);
    // The first message's own prompt held only itself.
    expect(userTexts(requests[0]!)).toEqual(['My secret number is 41.']);

    // The thread as the api shows it: three turns, each with its cards.
    const view = await show(agent, thread);
    expect(view.messages).toBe(3);
    expect(view.turns.map((t) => [t.seq, t.status])).toEqual([
      [1, 'succeeded'],
      [2, 'succeeded'],
      [3, 'succeeded'],
    ]);
    expect(view.turns[1]!.cards.map((c) => c.kind)).toEqual([
      'message',
      'message',
      'tool.call',
      'tool.result',
      'final',
    ]);
    expect(view.turns[1]!.cards[3]!.content).toMatchObject({
      status: 'succeeded',
      result: { word: 'banana' },
    });
    const list = await api('GET', `/agents/${agent}/threads`);
    expect(list.body).toMatchObject({
      threads: [{ thread_id: thread, messages: 3, title: 'talk to talker' }],
      next_after: null,
    });
  });

  it('without the thread, the same question cannot be answered: a fresh thread knows nothing', async () => {
    await worker();
    const agent = await mesh.createAgent({ id: 'forgetful', script: [plusOne] });
    const thread = await openThread(agent);
    await say(agent, thread, 'What is my secret number plus one?');
    const t = await answered(agent, thread, 1);
    expect(t.final_card?.content).toMatchObject({ result: 'I do not know your number.' });
  });

  it('messages sent while a turn runs wait, then run one at a time in the order sent', async () => {
    await worker();
    const agent = await mesh.createAgent({
      id: 'orderly',
      script: [
        { text: 'first done', delayMs: 2_500 },
        (req) => ({ text: `second saw: ${userTexts(req).join(' | ')}` }),
        (req) => ({ text: `third saw: ${userTexts(req).join(' | ')}` }),
      ],
    });
    const thread = await openThread(agent);
    await say(agent, thread, 'one');
    await until(() => Promise.resolve(mesh.requestsOf(agent).length === 1 ? true : undefined));
    const queued = [await say(agent, thread, 'two'), await say(agent, thread, 'three')];

    // While the first turn runs, the others wait with no turn of their own.
    const during = await show(agent, thread);
    expect(during.turns.map((t) => [t.seq, t.status, t.turn === null])).toEqual([
      [1, 'running', false],
      [2, 'pending', true],
      [3, 'pending', true],
    ]);
    expect(mesh.requestsOf(agent)).toHaveLength(1);

    const third = await answered(agent, thread, 3);
    const view = await show(agent, thread);
    expect(view.turns.map((t) => (t.final_card?.content as { result: string }).result)).toEqual([
      'first done',
      'second saw: one | two',
      'third saw: one | two | three',
    ]);
    expect(third.status).toBe('succeeded');
    // Each waiting message is announced running when its turn starts, then done.
    for (const m of queued) {
      await until(() =>
        Promise.resolve(
          mesh.taskEvents().filter((e) => e.task_id === m.task_id).length === 2 ? true : undefined,
        ),
      );
      expect(
        mesh
          .taskEvents()
          .filter((e) => e.task_id === m.task_id)
          .map((e) => e.status),
      ).toEqual(['running', 'succeeded']);
    }
    // Each turn began only after the one before it had ended.
    const cardTime = (t: Turn, kind: string) =>
      new Date(t.cards.find((c) => c.kind === kind)!.created_at).getTime();
    for (const [a, b] of [
      [0, 1],
      [1, 2],
    ] as const) {
      expect(cardTime(view.turns[b]!, 'message')).toBeGreaterThanOrEqual(
        cardTime(view.turns[a]!, 'final'),
      );
    }
  });

  it('canceling the running turn starts the next message; a canceled waiting message never runs', async () => {
    await worker();
    const agent = await mesh.createAgent({
      id: 'canceled',
      script: [
        { delayMs: 30_000, text: 'too late' },
        (req) => ({
          text: req.body.messages
            .slice(1)
            .map((m) => `${m.role}: ${String(m.content)}`)
            .join('\n'),
        }),
      ],
    });
    const thread = await openThread(agent);
    const one = await say(agent, thread, 'one');
    await until(() => Promise.resolve(mesh.requestsOf(agent).length === 1 ? true : undefined));
    const two = await say(agent, thread, 'two');
    await say(agent, thread, 'three');
    const drop = await api('POST', `/tasks/${two.task_id}/cancel`, { reason: 'not this one' });
    expect(drop.status, drop.raw).toBe(200);
    const stop = await api('POST', `/tasks/${one.task_id}/cancel`, { reason: 'took too long' });
    expect(stop.status, stop.raw).toBe(200);

    const third = await answered(agent, thread, 3);
    expect(third.status).toBe('succeeded');
    expect((third.final_card?.content as { result: string }).result).toBe(
      [
        'user: one',
        'assistant: [this turn ended canceled: took too long]',
        'user: two',
        'assistant: [this turn ended canceled: not this one]',
        'user: three',
      ].join('\n'),
    );
    const view = await show(agent, thread);
    expect(view.turns.map((t) => [t.seq, t.status, t.turn === null])).toEqual([
      [1, 'canceled', false],
      [2, 'canceled', true],
      [3, 'succeeded', false],
    ]);
    expect(mesh.requestsOf(agent)).toHaveLength(2);
    // The cancel started the third message's turn, and said so.
    const three = view.turns[2]!.task_id;
    await until(() =>
      Promise.resolve(
        mesh.taskEvents().filter((e) => e.task_id === three).length === 2 ? true : undefined,
      ),
    );
    expect(
      mesh
        .taskEvents()
        .filter((e) => e.task_id === three)
        .map((e) => e.status),
    ).toEqual(['running', 'succeeded']);
  });

  it("another project's key is refused on every thread route, and nothing is filed", async () => {
    await worker();
    const agent = await mesh.createAgent({ id: 'private', script: [{ text: 'hello' }] });
    const thread = await openThread(agent);
    const other = await mesh.api.createProject();
    const routes: ['GET' | 'POST', string, unknown][] = [
      ['POST', `/agents/${agent}/threads`, {}],
      ['GET', `/agents/${agent}/threads`, undefined],
      ['GET', `/agents/${agent}/threads/${thread}`, undefined],
      ['POST', `/agents/${agent}/threads/${thread}/messages`, { input: 'let me in' }],
    ];
    for (const [method, url, body] of routes) {
      // Its key on this project's paths, and this project's ids under its own project.
      const here = await api(method, url, body, other.key);
      expect(here.status, `${method} ${url}`).toBe(404);
      const there = await mesh.api.request(method, `/v1/projects/${other.id}${url}`, {
        key: other.key,
        body,
      });
      expect(there.status, `${method} ${url} under ${other.id}`).toBe(404);
    }
    const view = await show(agent, thread);
    expect(view).toMatchObject({ messages: 0, turns: [] });
    expect((await api('GET', `/agents/${agent}/threads`)).body).toMatchObject({
      threads: [{ thread_id: thread }],
    });
  });

  it('refuses a message past thread_queue_max, and bad input, with clear errors', async () => {
    await worker();
    // The first turn keeps the model busy while the next messages queue behind it.
    const agent = await mesh.createAgent({
      id: 'busy',
      script: [{ delayMs: 5_000, text: 'done' }],
    });
    const thread = await openThread(agent);
    const max = mesh.api.config.agent.thread_queue_max;
    expect(max).toBe(3);
    let refused;
    for (let i = 0; i <= max + 1; i++) {
      const res = await api('POST', `/agents/${agent}/threads/${thread}/messages`, {
        input: `m${i}`,
      });
      if (res.status !== 202) {
        refused = res;
        break;
      }
    }
    expect(refused?.status).toBe(409);
    expect(refused?.body).toMatchObject({
      error: { code: 'conflict', details: { limit: max } },
    });
    const empty = await api('POST', `/agents/${agent}/threads/${thread}/messages`, { input: '' });
    expect(empty.status).toBe(400);
    const unknown = await api(
      'POST',
      `/agents/${agent}/threads/0190b6a2-0000-7000-8000-000000000000/messages`,
      { input: 'hi' },
    );
    expect(unknown.status).toBe(404);
    const noAgent = await api('POST', `/agents/nobody/threads`, {});
    expect(noAgent.status).toBe(404);
  });
});
