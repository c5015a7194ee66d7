// Threads over the api of an agent mesh: what the thread tests share (opening a thread, sending
// a message, reading it back, waiting for an answer) and a scripted model answer that can only
// be right when an earlier message is in the prompt.
import { expect } from 'vitest';
import type { RecordedChatRequest } from '@toolmesh/testing';
import type { AgentMesh } from './agent-mesh.ts';
import { until } from './procs.ts';

export interface Turn {
  seq: number;
  task_id: string;
  status: string;
  turn: { turn_id: string; status: string } | null;
  cards: { kind: string; content: any; created_at: string }[];
  final_card: { content: any } | null;
  created_at: string;
  updated_at: string;
}
export interface ThreadView {
  thread_id: string;
  messages: number;
  turns: Turn[];
}

/** Helpers over the mesh `of()` returns when called (test files start theirs in beforeAll). */
export function threadApi(of: () => AgentMesh) {
  const api = (method: 'GET' | 'POST', url: string, body?: unknown, key?: string) =>
    of().api.request(method, `/v1/projects/${of().project.id}${url}`, {
      key: key ?? of().project.key,
      body,
    });
  const show = async (agent: string, thread: string) =>
    (await api('GET', `/agents/${agent}/threads/${thread}`)).body as ThreadView;
  return {
    api,
    show,
    openThread: async (agent: string): Promise<string> => {
      const res = await api('POST', `/agents/${agent}/threads`, { title: `talk to ${agent}` });
      expect(res.status, res.raw).toBe(201);
      return (res.body as { thread_id: string }).thread_id;
    },
    say: async (agent: string, thread: string, input: string) => {
      const res = await api('POST', `/agents/${agent}/threads/${thread}/messages`, { input });
      expect(res.status, res.raw).toBe(202);
      return res.body as { task_id: string; seq: number };
    },
    /** Polls until message `seq` of the thread has ended. */
    answered: (agent: string, thread: string, seq: number, ms = 60_000) =>
      until(async () => {
        const t = (await show(agent, thread)).turns.find((x) => x.seq === seq);
        return t && ['succeeded', 'failed', 'canceled'].includes(t.status) ? t : undefined;
      }, ms),
  };
}

/** The user messages of a model request, in order. */
export const userTexts = (r: RecordedChatRequest) =>
  r.body.messages.filter((m) => m.role === 'user').map((m) => String(m.content));

/** Answers "my number plus one" only from a number stated earlier in the prompt. */
export function plusOne(req: RecordedChatRequest) {
  const said = req.body.messages
    .filter((m) => m.role === 'user')
    .map((m) => /my secret number is (\d+)/i.exec(String(m.content)))
    .find((m) => m !== null);
  return said
    ? { toolCalls: [{ name: 'submit_result', arguments: { result: String(Number(said[1]) + 1) } }] }
    : { text: 'I do not know your number.' };
}
