// Turn state against a real Postgres: a task starts a turn once, a lapsed lease is taken over and
// fences the old owner's writes, results of the current epoch resume the turn and others do not.
import { setTimeout as sleep } from 'node:timers/promises';
import { beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store.ts';
import { useMigratedStore } from '../test-support.ts';

const P = 'proj';
const A = 'ada';

const P2 = 'proj-other';
const fixture = useMigratedStore([P, P2], { agents: [[P, A]] });
let store: Store;
beforeAll(() => {
  store = fixture.store;
});

async function newTask(input: unknown): Promise<string> {
  return store.tx(async (tx) => {
    const t = await tx.tasks.create({ projectId: P, agentId: A, channel: 'main', input });
    await tx.inbox.addTask({ projectId: P, agentId: A, taskId: t!.task_id, payload: {} });
    return t!.task_id;
  });
}

const result = (toolCallId: string, turnId: string, epoch: number) =>
  store.results.record({
    projectId: P,
    channel: 'main',
    toolCallId,
    toolName: 'builtin.echo',
    target: 'builtin',
    author: 'test',
    instanceId: 'test',
    content: { status: 'succeeded', result: { epoch }, duration_ms: 1 },
    agentId: A,
    turnId,
    turnEpoch: epoch,
  });

describe('turns', () => {
  it('starts one turn per task, with the task as its first card', async () => {
    const taskId = await newTask({ ask: 'hello' });
    const first = await store.turns.applyInbox(P, A, 'i1');
    expect(first.started).toHaveLength(1);
    expect((await store.turns.applyInbox(P, A, 'i2')).applied).toBe(0);
    expect((await store.tasks.get(P, taskId))?.status).toBe('running');
    const turn = await store.turns.byTask(P, taskId);
    const conv = await store.turns.conversation(turn!);
    expect(conv.cards.map((c) => c.content)).toEqual([
      { role: 'user', content: '{"ask":"hello"}' },
    ]);
    const claimed = await store.turns.claim({ projectId: P, agentId: A }, 'i1', 60_000);
    expect(claimed).toMatchObject({ turn_id: turn!.turn_id, claims: 1, status: 'running' });
    const { card } = (await store.turns.finish(claimed!, {
      status: 'failed',
      content: {},
      author: 'x',
    }))!;
    expect((await store.tasks.get(P, taskId))?.final_card_id).toBe(card.card_id);
  });

  it('applies, claims and reads a step context in one wakeup; two wakeups claim it once', async () => {
    const taskId = await newTask('wake me');
    const scope = { projectId: P, agentId: A };
    const [a, b] = await Promise.all([
      store.turns.wake(scope, 'i1', 60_000, true),
      store.turns.wake(scope, 'i2', 60_000, true),
    ]);
    const won = a.claimed ? a : b;
    const lost = a.claimed ? b : a;
    expect(lost.claimed).toBeUndefined();
    expect([a.applied?.applied, b.applied?.applied].sort()).toEqual([0, 1]);
    const { turn, context } = won.claimed!;
    expect(turn).toMatchObject({ task_id: taskId, status: 'running', claims: 1, step: 0 });
    expect(turn.lease_until).toBeInstanceOf(Date);
    expect(turn.run_token).toMatch(/^[0-9a-f-]{36}$/);
    // What it returns is what the separate reads give.
    const { run_token: _token, ...stored } = turn;
    expect(await store.turns.get(P, turn.turn_id)).toMatchObject(stored);
    expect(context).toEqual(await store.turns.stepContext(turn));
    expect(context.conversation.cards.map((c) => c.content)).toEqual([
      { role: 'user', content: 'wake me' },
    ]);
    // Claimed: nothing is due, and a wakeup without applying finds nothing either.
    const none = await store.turns.wake(scope, 'i3', 60_000, false);
    expect(none).toEqual({ applied: undefined, claimed: undefined });
    await store.turns.finish(turn, { status: 'succeeded', content: {}, author: 'x' });
  });

  it('reads the registry again only after a tool was added, changed or removed', async () => {
    const taskId = await newTask('tools');
    const { claimed } = await store.turns.wake({ projectId: P, agentId: A }, 'i1', 60_000, true);
    const turn = claimed!.turn;
    expect(turn.task_id).toBe(taskId);
    const names = async () => (await store.turns.stepContext(turn)).registry.map((t) => t.name);
    const listed = async () => (await store.tools.list(P, {})).map((t) => t.name);
    const tool = (name: string) => ({
      name,
      target: 'http',
      description: `the ${name} tool`,
      category: 'test',
      parameters: { type: 'object' },
      origin: 'external' as const,
    });
    expect(await names()).toEqual(await listed());
    await store.tools.create(P, tool('http.one'));
    expect(await names()).toContain('http.one');
    const again = await store.turns.stepContext(turn);
    expect(again.registry.find((t) => t.name === 'http.one')?.description).toBe(
      'the http.one tool',
    );
    await store.tools.update(P, 'http.one', { description: 'changed' });
    const changed = await store.turns.stepContext(turn);
    expect(changed.registry.find((t) => t.name === 'http.one')?.description).toBe('changed');
    // A removal and an addition in one transaction leave as many tools, none the same.
    await store.tx(async (tx) => {
      await tx.tools.delete(P, 'http.one');
      await tx.tools.create(P, tool('http.two'));
    });
    expect(await names()).toEqual(await listed());
    expect(await names()).not.toContain('http.one');
    await store.tools.delete(P, 'http.two');
    expect(await names()).toEqual(await listed());
    await store.turns.finish(turn, { status: 'succeeded', content: {}, author: 'x' });
  });

  it("a project's step never sees another project's registry, cached or not", async () => {
    await fixture.pool.query(
      `INSERT INTO resource.agents (project_id, agent_id, name) VALUES ($1, $2, 'A')`,
      [P2, A],
    );
    const tool = (name: string) => ({
      name,
      target: 'http',
      description: name,
      category: 'test',
      parameters: { type: 'object' },
      origin: 'external' as const,
    });
    await store.tools.create(P, tool('http.mine'));
    await store.tools.create(P2, tool('http.theirs'));
    const start = async (projectId: string) => {
      const k = await store.tx(async (tx) => {
        const t = await tx.tasks.create({ projectId, agentId: A, channel: 'main', input: 'x' });
        await tx.inbox.addTask({ projectId, agentId: A, taskId: t!.task_id, payload: {} });
        return t!;
      });
      const { claimed } = await store.turns.wake({ projectId, agentId: A }, 'i1', 60_000, true);
      expect(claimed?.turn.task_id).toBe(k.task_id);
      return claimed!;
    };
    const mine = await start(P);
    const theirs = await start(P2);
    const names = (r: { name: string }[]) => r.map((t) => t.name);
    // Read in turns, so each read finds the other project's registry cached beside its own.
    for (let i = 0; i < 3; i++) {
      const a = await store.turns.stepContext(mine.turn);
      const b = await store.turns.stepContext(theirs.turn);
      expect(names(a.registry)).toContain('http.mine');
      expect(names(a.registry)).not.toContain('http.theirs');
      expect(names(b.registry)).toEqual(['http.theirs']);
      expect(a.registry.every((t) => t.project_id === P)).toBe(true);
    }
    expect(names(mine.context.registry)).not.toContain('http.theirs');
    expect(names(theirs.context.registry)).toEqual(['http.theirs']);
    await store.tools.delete(P, 'http.mine');
    await store.tools.delete(P2, 'http.theirs');
    for (const c of [mine, theirs])
      await store.turns.finish(c.turn, { status: 'succeeded', content: {}, author: 'x' });
  });

  it('shows a structured input to the model as JSON.stringify writes it, under version 7 ids', async () => {
    const input = {
      zeta: { 10: 'ten', b: [1.5, -2, true, null, 'x'], 2: 'two' },
      say: 'tab\there "quoted" \\ back, ünïcødé ✓, \u0001',
      '': {},
      list: [],
      '007': 'not an index',
    };
    // The ids are made between these two readings of the host's one clock.
    const before = Date.now();
    const taskId = await newTask(input);
    const applied = await store.turns.applyInbox(P, A, 'i1');
    expect(applied.started).toEqual([{ taskId, turnId: expect.any(String), channel: 'main' }]);
    const turn = await store.turns.byTask(P, taskId);
    const [card] = (await store.turns.conversation(turn!)).cards;
    const after = Date.now();
    // What the worker read back from the task and stringified before (jsonb orders the keys).
    const stored = (await store.tasks.get(P, taskId))!.input;
    expect(card!.content).toEqual({ role: 'user', content: JSON.stringify(stored) });
    expect(JSON.parse((card!.content as { content: string }).content)).toEqual(input);
    const v7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
    for (const id of [turn!.turn_id, card!.card_id]) {
      expect(id).toMatch(v7);
      // The first 48 bits are the Unix time in milliseconds.
      const ms = parseInt(id.replace(/-/g, '').slice(0, 12), 16);
      expect(ms).toBeGreaterThanOrEqual(before);
      expect(ms).toBeLessThanOrEqual(after);
    }
    const claimed = await store.turns.claim({ projectId: P, agentId: A }, 'i1', 60_000);
    await store.turns.finish(claimed!, { status: 'succeeded', content: {}, author: 'x' });
  });

  it('fences the writes of an owner whose lease lapsed; results of an older epoch change nothing', async () => {
    const taskId = await newTask('go');
    await store.turns.applyInbox(P, A, 'i1');
    const scope = { projectId: P, agentId: A };
    const stale = await store.turns.claim(scope, 'slow', 1);
    expect(stale?.task_id).toBe(taskId);
    await sleep(20);
    const owner = await store.turns.claim(scope, 'fast', 60_000);
    expect(owner).toMatchObject({ turn_id: stale!.turn_id, claims: 2, run_owner: 'fast' });
    expect(await store.turns.claim(scope, 'third', 60_000)).toBeUndefined();

    const step = (id: string) => ({
      assistant: {
        role: 'assistant',
        tool_calls: [{ id, name: 'builtin__echo', arguments: '{}' }],
      },
      calls: [{ toolCallId: id, toolName: 'builtin.echo', arguments: {}, deadlineMs: 60_000 }],
      author: 'agent:ada',
    });
    expect(await store.turns.commitStep(stale!, step('late-call'))).toBeUndefined();
    expect(await store.turns.renew(stale!.turn_id, stale!.run_token, 1000)).toBe(false);
    expect(await store.turns.commitStep(owner!, step('call-e1'))).toEqual({ epoch: 1, step: 1 });
    expect(
      await store.turns.finish(owner!, { status: 'succeeded', content: {}, author: 'x' }),
    ).toBeUndefined();
    await store.turns.markPublished(P, ['call-e1']);

    // A result carrying another epoch is ignored; the one of epoch 1 resumes the turn.
    await result('call-e1', owner!.turn_id, 0);
    const ignored = await store.turns.applyInbox(P, A, 'i1');
    expect(ignored.ignored).toEqual([
      { correlationId: 'call-e1', reason: 'result carries epoch 0, turn is at 1' },
    ]);
    expect((await store.turns.get(P, owner!.turn_id))?.status).toBe('waiting');
    await store.pool.query(
      `UPDATE state.agent_inbox SET status = 'pending', payload = payload || '{"turn_epoch": 1}'
       WHERE correlation_id = 'call-e1'`,
    );
    const resumed = await store.turns.applyInbox(P, A, 'i1');
    expect(resumed.ignored).toEqual([]);
    expect(resumed.resumed).toContain(owner!.turn_id);
    const calls = await store.turns.calls(owner!.turn_id);
    expect(calls).toMatchObject([{ tool_call_id: 'call-e1', status: 'done', epoch: 1 }]);
    const conv = await store.turns.conversation(owner!);
    expect(conv.results.get('call-e1')?.content).toMatchObject({ result: { epoch: 0 } });
    // The step's one read gives what the separate reads give.
    expect(await store.turns.stepContext(owner!)).toEqual({
      profile: undefined,
      registry: await store.tools.list(P, {}),
      attached: await store.agents.listTools(P, A),
      conversation: conv,
      place: await store.threads.placeOf(P, owner!.task_id),
    });
    expect(conv.cards.map((c) => c.kind)).toEqual(['message', 'message', 'tool.call']);

    const again = await store.turns.claim(scope, 'fast', 60_000);
    expect(again?.claims).toBe(1);
    const finished = await store.turns.finish(again!, {
      status: 'succeeded',
      content: { result: 'ok' },
      author: 'agent:ada',
    });
    const card = finished?.card;
    expect(card?.kind).toBe('final');
    expect(finished?.next).toBeUndefined();
    expect(await store.tasks.get(P, taskId)).toMatchObject({
      status: 'succeeded',
      final_card_id: card!.card_id,
    });
  });
});
