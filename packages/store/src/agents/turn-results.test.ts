// A tool result answers its turn in the statement that writes its card (migration 0044): the
// call is answered and its turn readied by the same commit, with no inbox row between them. A
// duplicate changes nothing; a result that cannot change its turn (a canceled turn, a call of a
// step the turn has left, a call of another project) changes nothing and is filed in the inbox
// for the worker to report; one filed under an agent's id for another tool is refused outright.
import { beforeAll, describe, expect, it } from 'vitest';
import { createStore, type Store } from '../store.ts';
import { useMigratedStore } from '../test-support.ts';
import type { ClaimedTurn } from './turn-records.ts';

const P = 'proj';
const P2 = 'proj-other';
const A = 'ada';
const fixture = useMigratedStore([P, P2], {
  agents: [
    [P, A],
    [P2, A],
  ],
});
let store: Store;
beforeAll(() => {
  store = fixture.store;
});

let n = 0;
/** A turn of a new task, claimed and suspended on calls of the given ids (epoch 1). */
async function waitingOn(ids: string[], projectId = P): Promise<ClaimedTurn> {
  await store.tasks.createInInbox({ projectId, agentId: A, channel: 'main', input: `t${n++}` }, {});
  const { claimed } = await store.turns.wake({ projectId, agentId: A }, 'i1', 60_000, true);
  const turn = claimed!.turn;
  const committed = await store.turns.commitStep(turn, {
    assistant: { role: 'assistant', tool_calls: [] },
    calls: ids.map((id) => ({
      toolCallId: id,
      toolName: 'builtin.echo',
      arguments: {},
      deadlineMs: 60_000,
    })),
    author: `agent:${A}`,
  });
  expect(committed).toEqual({ epoch: 1, step: 1 });
  return turn;
}

const record = (
  s: Store,
  toolCallId: string,
  turn: ClaimedTurn,
  o: { projectId?: string; epoch?: number; text?: string } = {},
) =>
  s.results.record({
    projectId: o.projectId ?? P,
    channel: 'main',
    toolCallId,
    toolName: 'builtin.echo',
    target: 'builtin',
    author: 'test',
    instanceId: 'test',
    content: { status: 'succeeded', result: { text: o.text ?? toolCallId }, duration_ms: 1 },
    agentId: A,
    turnId: turn.turn_id,
    turnEpoch: o.epoch ?? 1,
  });

const statusOf = async (t: ClaimedTurn) => (await store.turns.get(t.project_id, t.turn_id))?.status;
const inboxRows = async (toolCallId: string) =>
  (
    await fixture.pool.query<{ status: string }>(
      `SELECT status FROM state.agent_inbox WHERE correlation_id = $1`,
      [toolCallId],
    )
  ).rows;

describe('a result answers its turn with its card', () => {
  it('answers the call in the commit that writes the card; the last one readies the turn', async () => {
    const turn = await waitingOn(['one-a', 'one-b']);
    const a = await record(store, 'one-a', turn);
    expect(a.inserted).toBe(true);
    expect(await statusOf(turn)).toBe('waiting');
    expect(await store.turns.calls(turn.turn_id)).toMatchObject([
      { tool_call_id: 'one-a', status: 'done', result_card_id: a.cardId },
      { tool_call_id: 'one-b', status: 'pending', result_card_id: null },
    ]);
    await record(store, 'one-b', turn);
    expect(await statusOf(turn)).toBe('ready');
    // Nothing went through the inbox: a wakeup finds the turn ready and claims it.
    expect([...(await inboxRows('one-a')), ...(await inboxRows('one-b'))]).toEqual([]);
    const woken = await store.turns.wake({ projectId: P, agentId: A }, 'i1', 60_000, true);
    expect(woken.claimed?.turn.turn_id).toBe(turn.turn_id);
    expect(woken.applied?.applied).toBe(0);
    const results = woken.claimed!.context.conversation.results;
    expect(results.get('one-b')?.content).toMatchObject({ result: { text: 'one-b' } });
    await store.turns.finish(woken.claimed!.turn, {
      status: 'succeeded',
      content: {},
      author: 'x',
    });
  });

  it('results of parallel calls written by statements racing each other ready the turn once', async () => {
    const ids = Array.from({ length: 8 }, (_, i) => `par-${i}`);
    const turn = await waitingOn(ids);
    // A store each: separate batches, so separate statements in separate transactions.
    const stores = ids.map(() => createStore(fixture.pool));
    await Promise.all(ids.map((id, i) => record(stores[i]!, id, turn)));
    expect(await statusOf(turn)).toBe('ready');
    expect((await store.turns.calls(turn.turn_id)).map((c) => c.status)).toEqual(
      ids.map(() => 'done'),
    );
    const { claimed } = await store.turns.wake({ projectId: P, agentId: A }, 'i1', 60_000, false);
    expect(claimed?.turn.turn_id).toBe(turn.turn_id);
    await store.turns.finish(claimed!.turn, { status: 'succeeded', content: {}, author: 'x' });
  });

  it('two batches answering calls of the same turns in opposite orders both commit', async () => {
    const t1 = await waitingOn(['x1-a', 'x1-b']);
    const t2 = await waitingOn(['x2-a', 'x2-b']);
    const [s1, s2] = [createStore(fixture.pool), createStore(fixture.pool)];
    // Each store's records of one tick are one statement.
    await Promise.all([
      record(s1, 'x1-a', t1),
      record(s1, 'x2-a', t2),
      record(s2, 'x2-b', t2),
      record(s2, 'x1-b', t1),
    ]);
    expect([await statusOf(t1), await statusOf(t2)]).toEqual(['ready', 'ready']);
    for (let i = 0; i < 2; i++) {
      const { claimed } = await store.turns.wake({ projectId: P, agentId: A }, 'i1', 60_000, false);
      await store.turns.finish(claimed!.turn, { status: 'succeeded', content: {}, author: 'x' });
    }
  });

  it('a duplicate result changes nothing: the first card stays the answer', async () => {
    const turn = await waitingOn(['dup-a', 'dup-b']);
    const first = await record(store, 'dup-a', turn, { text: 'first' });
    const second = await record(createStore(fixture.pool), 'dup-a', turn, { text: 'second' });
    expect(second).toMatchObject({ inserted: false, cardId: first.cardId });
    expect(second.content).toMatchObject({ result: { text: 'first' } });
    expect(await store.turns.calls(turn.turn_id)).toMatchObject([
      { tool_call_id: 'dup-a', status: 'done', result_card_id: first.cardId },
      { tool_call_id: 'dup-b', status: 'pending' },
    ]);
    expect(await statusOf(turn)).toBe('waiting');
    expect(await inboxRows('dup-a')).toEqual([]);
    await record(store, 'dup-b', turn);
    const { claimed } = await store.turns.wake({ projectId: P, agentId: A }, 'i1', 60_000, false);
    await store.turns.finish(claimed!.turn, { status: 'succeeded', content: {}, author: 'x' });
  });

  it('a result for a canceled turn is kept as a card, answers nothing and is reported', async () => {
    const turn = await waitingOn(['cx-a']);
    const canceled = await store.tasks.cancel(P, turn.task_id, 'stop', 'test');
    expect(canceled.kind).toBe('canceled');
    const late = await record(store, 'cx-a', turn);
    expect(late.inserted).toBe(true);
    expect(await statusOf(turn)).toBe('canceled');
    expect(await store.turns.calls(turn.turn_id)).toMatchObject([
      { tool_call_id: 'cx-a', status: 'canceled', result_card_id: null },
    ]);
    expect(await inboxRows('cx-a')).toEqual([{ status: 'pending' }]);
    const applied = await store.turns.applyInbox(P, A, 'i1');
    expect(applied.ignored).toEqual([
      { correlationId: 'cx-a', reason: 'turn is at epoch 1 (canceled), call was of epoch 1' },
    ]);
    expect(applied.resumed).toEqual([]);
  });

  it('a late result arriving while the turn runs its next step changes nothing', async () => {
    const turn = await waitingOn(['run-a', 'run-b']);
    await record(store, 'run-a', turn);
    // run-b's deadline passed long ago: it times out, and the turn runs its next step.
    await store.turns.markPublished(P, ['run-b'], [120_000]);
    const fired = await store.turns.fireDeadlines(0, 'test', 10);
    expect(fired.map((c) => c.tool_call_id)).toEqual(['run-b']);
    const { claimed } = await store.turns.wake({ projectId: P, agentId: A }, 'i1', 60_000, false);
    expect(claimed?.turn).toMatchObject({ turn_id: turn.turn_id, status: 'running', epoch: 1 });
    // Now the tool answers after all: its card is kept, the step's lease and the timeout stand.
    const late = await record(store, 'run-b', turn);
    expect(late.inserted).toBe(true);
    expect(await store.turns.get(P, turn.turn_id)).toMatchObject({
      status: 'running',
      run_token: claimed!.turn.run_token,
    });
    expect((await store.turns.calls(turn.turn_id))[1]).toMatchObject({
      tool_call_id: 'run-b',
      status: 'timeout',
    });
    expect((await store.turns.applyInbox(P, A, 'i1')).ignored).toEqual([
      { correlationId: 'run-b', reason: 'turn is at epoch 1 (running), call was of epoch 1' },
    ]);
    const done = await store.turns.finish(claimed!.turn, {
      status: 'succeeded',
      content: {},
      author: 'x',
    });
    expect(done?.card.kind).toBe('final');
  });

  it("another project's result under the same call id answers nothing of this project", async () => {
    const turn = await waitingOn(['shared-id']);
    const theirs = await waitingOn(['their-own'], P2);
    const r = await record(store, 'shared-id', theirs, { projectId: P2 });
    expect(r.inserted).toBe(true);
    expect(await store.turns.calls(turn.turn_id)).toMatchObject([
      { tool_call_id: 'shared-id', status: 'pending', result_card_id: null },
    ]);
    expect(await statusOf(turn)).toBe('waiting');
    expect(await statusOf(theirs)).toBe('waiting');
    expect((await store.turns.applyInbox(P2, A, 'i1')).ignored).toEqual([
      { correlationId: 'shared-id', reason: 'no turn made this call' },
    ]);
    expect((await store.turns.applyInbox(P, A, 'i1')).applied).toBe(0);
  });
  it("a result filed under the id of an agent's call to another tool answers nothing", async () => {
    const turn = await waitingOn(['reserved']);
    const forged = store.results.record({
      projectId: P,
      channel: 'main',
      toolCallId: 'reserved',
      toolName: 'builtin.other',
      target: 'builtin',
      author: 'test',
      instanceId: 'test',
      content: { status: 'succeeded', result: 'forged', duration_ms: 1 },
      agentId: A,
      turnId: turn.turn_id,
      turnEpoch: 1,
    });
    await expect(forged).rejects.toMatchObject({ code: 'tool_call_id_taken' });
    expect(await store.cards.toolResult(P, 'reserved')).toBeUndefined();
    expect(await store.turns.calls(turn.turn_id)).toMatchObject([
      { tool_call_id: 'reserved', status: 'pending', result_card_id: null },
    ]);
    expect(await inboxRows('reserved')).toEqual([]);
    // The agent's own call still gets its slot.
    await record(store, 'reserved', turn);
    expect(await statusOf(turn)).toBe('ready');
  });
});
