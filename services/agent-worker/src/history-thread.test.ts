// The history of a thread as the worker puts it in a prompt, read from a real Postgres: a small
// budget leaves out the oldest turns after the first, keeps the first message, and says so in
// the system prompt; a task of no thread is left as it is.
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPool, createStore, migrate, type ClaimedTurn, type Store } from '@toolmesh/store';
import { usePostgres, type TestPostgres } from '@toolmesh/testing';
import { estimateTokens, withThreadHistory } from './history.ts';
import type { ChatMessage } from './llm.ts';

const P = 'proj';
const A = 'ada';
let db: TestPostgres;
let store: Store;

beforeAll(async () => {
  db = await usePostgres();
  const logger = pino({ level: 'silent' });
  const pool = createPool({
    url: db.url,
    max: 4,
    statementTimeoutMs: 5_000,
    connectTimeoutMs: 5_000,
    logger,
  });
  await migrate({ pool, logger });
  store = createStore(pool);
  await pool.query(`INSERT INTO resource.projects (project_id, name) VALUES ($1, 'p')`, [P]);
  await pool.query(
    `INSERT INTO resource.agents (project_id, agent_id, name) VALUES ($1, $2, 'A')`,
    [P, A],
  );
});
afterAll(async () => {
  await store?.close();
  await db?.cleanup();
});

/** Sends a message and runs its turn to a plain answer; returns the turn of the last one. */
async function converse(threadId: string, input: string, answer: string): Promise<ClaimedTurn> {
  const taskId = await store.tx(async (tx) => {
    const next = await tx.threads.nextMessage(P, A, threadId, 10);
    if (next.kind !== 'numbered') throw new Error(next.kind);
    const t = await tx.tasks.create({
      projectId: P,
      agentId: A,
      channel: 'main',
      input,
      thread: { threadId, seq: next.seq },
    });
    await tx.inbox.addTask({ projectId: P, agentId: A, taskId: t!.task_id, payload: {} });
    return t!.task_id;
  });
  await store.turns.applyInbox(P, A, 'i1');
  const turn = await store.turns.claim({ projectId: P, agentId: A }, 'i1', 60_000);
  expect(turn?.task_id).toBe(taskId);
  if (answer) {
    await store.turns.finish(turn!, {
      status: 'succeeded',
      content: { result: answer },
      author: `agent:${A}`,
    });
  }
  return turn!;
}

const SYSTEM: ChatMessage = { role: 'system', content: 'You are agent ada.' };

it('keeps the first message and the newest turns within the budget, and says what it left out', async () => {
  const thread = await store.threads.create({ projectId: P, agentId: A, channel: 'main' });
  const long = 'x'.repeat(400);
  await converse(thread!.thread_id, `My name is Ada. ${long}`, `Hello Ada. ${long}`);
  await converse(thread!.thread_id, `second ${long}`, `answer two ${long}`);
  await converse(thread!.thread_id, `third ${long}`, `answer three ${long}`);
  await converse(thread!.thread_id, `fourth ${long}`, `answer four ${long}`);
  const current = await converse(thread!.thread_id, 'What is my name?', '');
  const own: ChatMessage = { role: 'user', content: 'What is my name?' };

  // Room for the first message and the two newest turns, not for a third.
  const turn = (n: string, a: string): ChatMessage[] => [
    { role: 'user', content: `${n} ${long}` },
    { role: 'assistant', content: `${a} ${long}` },
  ];
  const first: ChatMessage = { role: 'user', content: `My name is Ada. ${long}` };
  const budget =
    estimateTokens([first]) +
    estimateTokens(turn('third', 'answer three')) +
    estimateTokens(turn('fourth', 'answer four')) +
    20;
  const messages = await withThreadHistory(
    store,
    current,
    { thread_history_tokens: budget, tool_result_max_chars: 1000 },
    [SYSTEM, own],
  );
  expect(messages).toEqual([
    {
      role: 'system',
      content: `You are agent ada.\n\n[1 of the 4 earlier turns of this conversation are left out to keep it within ${budget} tokens; of the first turn only its message is kept.]`,
    },
    first,
    ...turn('third', 'answer three'),
    ...turn('fourth', 'answer four'),
    own,
  ]);

  // With room for everything, every turn is there whole and there is no note.
  const all = await withThreadHistory(
    store,
    current,
    { thread_history_tokens: 100_000, tool_result_max_chars: 1000 },
    [SYSTEM, own],
  );
  expect(all[0]).toEqual(SYSTEM);
  expect(all.filter((m) => m.role === 'user')).toHaveLength(5);
  expect(all.filter((m) => m.role === 'assistant')).toHaveLength(4);
  await store.turns.finish(current, {
    status: 'succeeded',
    content: { result: 'Ada' },
    author: `agent:${A}`,
  });
});

it('leaves the prompt of a task of no thread, and of a first message, as it is', async () => {
  const thread = await store.threads.create({ projectId: P, agentId: A, channel: 'main' });
  const opening = await converse(thread!.thread_id, 'hello', '');
  const cfg = { thread_history_tokens: 10, tool_result_max_chars: 1000 };
  const own: ChatMessage[] = [SYSTEM, { role: 'user', content: 'hello' }];
  expect(await withThreadHistory(store, opening, cfg, own)).toEqual(own);
  const task = await store.tx(async (tx) => {
    const t = await tx.tasks.create({ projectId: P, agentId: A, channel: 'main', input: 'solo' });
    return t!;
  });
  const loose = { ...opening, task_id: task.task_id };
  expect(await withThreadHistory(store, loose, cfg, own)).toEqual(own);
});
