// Threads against a real Postgres: messages are numbered in order, a message applied while a
// turn of its thread is unfinished waits, the end of that turn starts the oldest waiting one,
// and a thread's turns read back with their cards.
import { beforeAll, describe, expect, it } from 'vitest';
import type { Store } from '../store.ts';
import { useMigratedStore } from '../test-support.ts';

const P = 'proj';
const A = 'ada';

const fixture = useMigratedStore([P], { agents: [[P, A]] });
let store: Store;
beforeAll(() => {
  store = fixture.store;
});

async function say(threadId: string, input: string): Promise<{ taskId: string; seq: number }> {
  return store.tx(async (tx) => {
    const next = await tx.threads.nextMessage(P, A, threadId, 10);
    if (next.kind !== 'numbered') throw new Error(next.kind);
    const t = await tx.tasks.create({
      projectId: P,
      agentId: A,
      channel: next.channel,
      input,
      thread: { threadId, seq: next.seq },
    });
    await tx.inbox.addTask({ projectId: P, agentId: A, taskId: t!.task_id, payload: {} });
    return { taskId: t!.task_id, seq: next.seq };
  });
}

async function finishRunning(result: string) {
  const claimed = await store.turns.claim({ projectId: P, agentId: A }, 'i1', 60_000);
  expect(claimed).toBeDefined();
  return {
    claimed: claimed!,
    done: await store.turns.finish(claimed!, {
      status: 'succeeded',
      content: { result },
      author: `agent:${A}`,
    }),
  };
}

describe('threads', () => {
  it('runs one turn of a thread at a time, the oldest waiting message next', async () => {
    const thread = await store.threads.create({ projectId: P, agentId: A, channel: 'main' });
    const one = await say(thread!.thread_id, 'one');
    const two = await say(thread!.thread_id, 'two');
    const three = await say(thread!.thread_id, 'three');
    expect([one.seq, two.seq, three.seq]).toEqual([1, 2, 3]);

    // All three rows are applied at once: only the first starts.
    const applied = await store.turns.applyInbox(P, A, 'i1');
    expect(applied.started.map((s) => s.taskId)).toEqual([one.taskId]);
    expect(applied.ignored.map((i) => i.correlationId)).toEqual([two.taskId, three.taskId]);
    expect((await store.tasks.get(P, two.taskId))?.status).toBe('pending');

    const first = await finishRunning('answer one');
    expect(first.claimed.task_id).toBe(one.taskId);
    expect(first.done?.next?.taskId).toBe(two.taskId);
    expect((await store.tasks.get(P, two.taskId))?.status).toBe('running');
    expect((await store.tasks.get(P, three.taskId))?.status).toBe('pending');

    const second = await finishRunning('answer two');
    expect(second.claimed.task_id).toBe(two.taskId);
    expect(second.done?.next?.taskId).toBe(three.taskId);
    const third = await finishRunning('answer three');
    expect(third.done?.next).toBeUndefined();

    const turns = await store.threads.turns(P, thread!.thread_id, { limit: 10 });
    expect(
      turns.map((t) => [t.seq, t.status, (t.final?.content as { result: string }).result]),
    ).toEqual([
      [1, 'succeeded', 'answer one'],
      [2, 'succeeded', 'answer two'],
      [3, 'succeeded', 'answer three'],
    ]);
    expect(turns[1]!.conversation.cards.map((c) => [c.kind, c.content])).toEqual([
      ['message', { role: 'user', content: 'two' }],
      ['final', { result: 'answer two' }],
    ]);
    // The newest turn and the first, for a prompt of a fourth message.
    const read = await store.threads.turns(P, thread!.thread_id, {
      beforeSeq: 4,
      limit: 1,
      withFirst: true,
    });
    expect(read.map((t) => t.seq)).toEqual([1, 3]);
    expect(await store.threads.placeOf(P, three.taskId)).toEqual({
      thread_id: thread!.thread_id,
      seq: 3,
    });
  });

  it("a message applied while the thread is idle starts the thread's oldest waiting message", async () => {
    const thread = await store.threads.create({ projectId: P, agentId: A, channel: 'main' });
    const one = await say(thread!.thread_id, 'one');
    const two = await say(thread!.thread_id, 'two');
    // The first message's row was applied elsewhere and found nothing to do (say, lost):
    // mark it done by hand, so only the second row is pending.
    await fixture.pool.query(
      `UPDATE state.agent_inbox SET status = 'done' WHERE correlation_id = $1`,
      [one.taskId],
    );
    const applied = await store.turns.applyInbox(P, A, 'i1');
    expect(applied.started.map((s) => s.taskId)).toEqual([one.taskId]);
    expect((await store.tasks.get(P, two.taskId))?.status).toBe('pending');
    await finishRunning('one done');
  });

  it('refuses a message past the waiting limit, and numbers none for another agent', async () => {
    const thread = await store.threads.create({ projectId: P, agentId: A, channel: 'main' });
    await say(thread!.thread_id, 'a');
    const full = await store.tx((tx) => tx.threads.nextMessage(P, A, thread!.thread_id, 1));
    expect(full).toEqual({ kind: 'full', waiting: 1 });
    const other = await store.tx((tx) => tx.threads.nextMessage(P, 'bob', thread!.thread_id, 5));
    expect(other).toEqual({ kind: 'not_found' });
    expect(await store.threads.get('elsewhere', A, thread!.thread_id)).toBeUndefined();
  });
});
