// Starting the deadlines of published calls (markPublished), which the agent worker does a moment
// after the publish: each deadline counts from the call's own acknowledgement, and a call that
// was answered in the meantime is not written.
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

describe('markPublished', () => {
  it('counts each deadline from its acknowledgement and leaves an answered call alone', async () => {
    const taskId = await store.tx(async (tx) => {
      const t = await tx.tasks.create({ projectId: P, agentId: A, channel: 'main', input: 'x' });
      await tx.inbox.addTask({ projectId: P, agentId: A, taskId: t!.task_id, payload: {} });
      return t!.task_id;
    });
    await store.turns.applyInbox(P, A, 'i1');
    const turn = await store.turns.claim({ projectId: P, agentId: A }, 'i1', 60_000);
    expect(turn?.task_id).toBe(taskId);
    const call = (id: string, deadlineMs: number) => ({
      toolCallId: id,
      toolName: 'builtin.echo',
      arguments: {},
      deadlineMs,
    });
    const committed = await store.turns.commitStep(turn!, {
      assistant: { role: 'assistant', tool_calls: [] },
      calls: [call('fast', 60_000), call('slow', 45_000)],
      author: 'agent:ada',
    });
    expect(committed).toEqual({ epoch: 1, step: 1 });

    // The fast call's result arrives before the worker marks its calls.
    await store.results.record({
      projectId: P,
      channel: 'main',
      toolCallId: 'fast',
      toolName: 'builtin.echo',
      target: 'builtin',
      author: 'test',
      instanceId: 'test',
      content: { status: 'succeeded', result: {}, duration_ms: 1 },
      agentId: A,
      turnId: turn!.turn_id,
      turnEpoch: 1,
    });
    expect((await store.turns.applyInbox(P, A, 'i1')).ignored).toEqual([]);

    await store.turns.markPublished(P, ['fast', 'slow'], [2_000, 2_000]);
    const { rows } = await fixture.pool.query<{
      tool_call_id: string;
      status: string;
      published: boolean;
      acked_2s_ago: boolean | null;
      deadline_after_ack_ms: number | null;
    }>(
      `SELECT tool_call_id, status, published_at IS NOT NULL AS published,
              published_at <= now() - interval '2 s' AS acked_2s_ago,
              round(extract(epoch FROM deadline_at - published_at) * 1000)::int
                AS deadline_after_ack_ms
       FROM state.turn_calls WHERE turn_id = $1 ORDER BY seq`,
      [turn!.turn_id],
    );
    expect(rows).toEqual([
      {
        tool_call_id: 'fast',
        status: 'done',
        published: false,
        acked_2s_ago: null,
        deadline_after_ack_ms: null,
      },
      // Acknowledged 2 s before the mark; its deadline 45 s after the acknowledgement.
      {
        tool_call_id: 'slow',
        status: 'pending',
        published: true,
        acked_2s_ago: true,
        deadline_after_ack_ms: 45_000,
      },
    ]);
    // Marked once: a second mark changes nothing.
    await store.turns.markPublished(P, ['slow'], [0]);
    const again = await fixture.pool.query<{ kept: boolean }>(
      `SELECT published_at <= now() - interval '2 s' AS kept
       FROM state.turn_calls WHERE tool_call_id = 'slow'`,
    );
    expect(again.rows).toEqual([{ kept: true }]);
  });
});
