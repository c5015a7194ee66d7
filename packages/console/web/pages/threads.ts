// Threads: each agent's conversations, and one thread as a chat: every message, the tools its
// turn called (with their results, folded), and the agent's answer as text or Markdown (with
// the images it names), or that the message waits for the turn before it. It follows the
// project's agent events and reloads as turns move on.
import { follow, get, p } from '../api.ts';
import { badge, clear, h, json, table, time } from '../dom.ts';
import { answerView, cardView } from '../render.ts';

interface ThreadItem {
  thread_id: string;
  agent_id: string;
  title: string | null;
  messages: number;
  updated_at: string;
}
interface Card {
  card_id: string;
  kind: string;
  tool_call_id: string | null;
  content: unknown;
}
interface Turn {
  seq: number;
  status: string;
  input: unknown;
  cards: Card[];
  final_card: Card | null;
  created_at: string;
}
interface ThreadDetail extends ThreadItem {
  turns: Turn[];
}

const asText = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

export async function threadsPage(root: HTMLElement, signal: AbortSignal): Promise<void> {
  const body = h('tbody');
  async function load(): Promise<void> {
    const { agents } = await get<{ agents: { id: string }[] }>(p('/agents'));
    const lists = await Promise.all(
      agents.map((a) =>
        get<{ threads: ThreadItem[] }>(p(`/agents/${encodeURIComponent(a.id)}/threads?limit=20`)),
      ),
    );
    const threads = lists
      .flatMap((l) => l.threads)
      .sort((a, b) => b.updated_at.localeCompare(a.updated_at));
    body.replaceChildren(
      ...threads.map((t) =>
        h(
          'tr',
          {
            class: 'row',
            'data-thread': t.thread_id,
            onclick: () => {
              location.hash = `#/threads/${encodeURIComponent(t.agent_id)}/${t.thread_id}`;
            },
          },
          h('td', {}, time(t.updated_at)),
          h('td', {}, t.agent_id),
          h('td', {}, t.title ?? '—'),
          h('td', {}, t.messages),
          h('td', { class: 'mono' }, t.thread_id),
        ),
      ),
    );
  }
  const t = table(['updated', 'agent', 'title', 'messages', 'thread'], []);
  t.querySelector('tbody')!.replaceWith(body);
  clear(root, h('div', { class: 'toolbar' }, h('h1', {}, 'Threads')), t);
  await load();
  // Read again once the feed is (re)connected: a thread that moved in between is not missed.
  void follow(
    (e) => {
      if (e.kind === 'agent.task') void load();
    },
    signal,
    (up) => up && void load().catch(() => undefined),
  );
}

/** What the turn answered, or where it stands. */
function answer(t: Turn): HTMLElement {
  const c = (t.final_card?.content ?? {}) as {
    result?: unknown;
    text?: unknown;
    error?: { message?: string };
  };
  if (t.status === 'succeeded') return answerView(c.result ?? c.text ?? '');
  if (t.status === 'pending') return h('p', { class: 'muted' }, 'waits for the turn before it…');
  if (t.status === 'running') return h('p', { class: 'muted' }, 'working…');
  return h('p', { class: 'error' }, c.error?.message ?? t.status);
}

function bubbles(t: Turn): HTMLElement[] {
  const results = new Map(
    t.cards.filter((c) => c.kind === 'tool.result').map((c) => [c.tool_call_id, c]),
  );
  const calls = t.cards
    .filter((c) => c.kind === 'tool.call')
    .map((c) => {
      const call = c.content as { tool_name?: string; arguments?: unknown } | null;
      const result = results.get(c.tool_call_id);
      return h(
        'details',
        { class: 'call' },
        h('summary', {}, `called ${call?.tool_name ?? '?'}`),
        json(call?.arguments),
        result ? cardView(result.content) : h('p', { class: 'muted' }, 'no result yet'),
      );
    });
  return [
    h(
      'li',
      { class: 'msg user', 'data-seq': t.seq },
      h('small', {}, `you · ${time(t.created_at)}`),
      h('p', { class: 'text' }, asText(t.input)),
    ),
    h(
      'li',
      { class: 'msg agent', 'data-seq': t.seq, 'data-status': t.status },
      h('small', {}, 'agent ', badge(t.status)),
      ...calls,
      answer(t),
    ),
  ];
}

export async function threadPage(
  root: HTMLElement,
  signal: AbortSignal,
  arg?: string,
): Promise<void> {
  const [agent = '', thread = ''] = (arg ?? '').split('/');
  const head = h('div', { class: 'toolbar' });
  const chat = h('ol', { class: 'chat' });
  clear(root, head, chat);
  async function render(): Promise<void> {
    const t = await get<ThreadDetail>(
      p(`/agents/${encodeURIComponent(agent)}/threads/${encodeURIComponent(thread)}?limit=200`),
    );
    clear(
      head,
      h('a', { href: '#/threads' }, '← threads'),
      h('h1', {}, t.title ?? `Thread with ${t.agent_id}`),
      h('span', { class: 'mono' }, t.thread_id),
    );
    chat.replaceChildren(...t.turns.flatMap(bubbles));
  }
  await render();
  void follow(
    (e) => {
      if (e.kind === 'agent.task' || e.kind === 'agent.step' || e.kind === 'tool.result')
        void render();
    },
    signal,
    (up) => up && void render().catch(() => undefined),
  );
}
