// Agents and tasks: the project's agents and recent tasks (live on task events), and one task's
// turn as a timeline: each model step's text (Markdown) and how long it took, each tool call
// with its duration and result card (images inline), the text the model is streaming now, and
// the final answer. A task still pending or running can be canceled from here.
import { ApiError, follow, get, p, post, type LiveEvent } from '../api.ts';
import { actionButton, statusLine } from '../actions.ts';
import { badge, clear, h, json, ms, table, time } from '../dom.ts';
import { answerView, cardView, markdown } from '../render.ts';

interface TaskItem {
  task_id: string;
  agent_id: string;
  status: string;
  created_at: string;
  updated_at: string;
}
interface Card {
  card_id: string;
  kind: string;
  tool_call_id: string | null;
  content: unknown;
  created_at: string;
}
interface Timeline {
  turn: { status: string; step: number } | null;
  cards: Card[];
  calls: {
    tool_call_id: string;
    tool_name: string;
    status: string;
    published_at: string | null;
    result: Card | null;
  }[];
}
interface Task {
  task_id: string;
  agent_id: string;
  status: string;
  input: unknown;
  created_at: string;
  updated_at: string;
  final_card: Card | null;
}

/** Milliseconds between two instants, or null without both. */
const between = (a: string | null | undefined, b: string | null | undefined): number | null =>
  a && b ? Math.max(0, Date.parse(b) - Date.parse(a)) : null;

const took = (n: number | null): HTMLElement | null =>
  n === null ? null : h('small', { class: 'duration' }, ` ${ms(n)}`);

export async function tasksPage(root: HTMLElement, signal: AbortSignal): Promise<void> {
  const agentsBox = h('section', {});
  const body = h('tbody');
  async function load(): Promise<void> {
    const { tasks } = await get<{ tasks: TaskItem[] }>(p('/tasks?limit=100'));
    body.replaceChildren(
      ...tasks.map((t) =>
        h(
          'tr',
          {
            class: 'row',
            'data-task': t.task_id,
            onclick: () => {
              location.hash = `#/tasks/${t.task_id}`;
            },
          },
          h('td', {}, time(t.created_at)),
          h('td', {}, t.agent_id),
          h('td', {}, badge(t.status)),
          h('td', { class: 'mono' }, t.task_id),
          h('td', {}, time(t.updated_at)),
          h(
            'td',
            { class: 'duration' },
            t.status === 'pending' || t.status === 'running'
              ? '—'
              : ms(between(t.created_at, t.updated_at)),
          ),
        ),
      ),
    );
  }
  const { agents } = await get<{ agents: { id: string; profile: string | null }[] }>(p('/agents'));
  clear(
    agentsBox,
    h('h2', {}, 'Agents'),
    h(
      'ul',
      { class: 'chips' },
      ...agents.map((a) => h('li', {}, `${a.id}`, h('small', {}, ` profile ${a.profile ?? '—'}`))),
    ),
  );
  const t = table(['created', 'agent', 'status', 'task', 'updated', 'took'], []);
  t.querySelector('tbody')!.replaceWith(body);
  // Find by id: a task of this project opens; anything else says so.
  const find = h('input', {
    name: 'find',
    placeholder: 'find by id',
    'aria-label': 'find a task by id',
  }) as HTMLInputElement;
  const findError = h('span', { class: 'error find-error', role: 'alert' });
  find.addEventListener('change', () => {
    const id = find.value.trim();
    findError.textContent = '';
    if (!id) return;
    get(p(`/tasks/${encodeURIComponent(id)}`))
      .then(() => {
        location.hash = `#/tasks/${encodeURIComponent(id)}`;
      })
      .catch((err: unknown) => {
        findError.textContent =
          err instanceof ApiError && (err.status === 404 || err.status === 400)
            ? `no task ${id} in this project`
            : String(err);
      });
  });
  clear(
    root,
    h('div', { class: 'toolbar' }, h('h1', {}, 'Agents & tasks'), find, findError),
    agentsBox,
    h('h2', {}, 'Tasks'),
    t,
  );
  await load();
  // Read again once the feed is (re)connected: a task that moved in between is not missed.
  void follow(
    (e) => {
      if (e.kind === 'agent.task') void load();
    },
    signal,
    (up) => up && void load().catch(() => undefined),
  );
}

function textOf(content: unknown): string {
  const c = content as { content?: unknown; text?: unknown } | null;
  if (typeof c?.content === 'string') return c.content;
  if (typeof c?.text === 'string') return c.text;
  return '';
}

export async function taskPage(root: HTMLElement, signal: AbortSignal, id?: string): Promise<void> {
  const taskId = id ?? '';
  const head = h('div', { class: 'toolbar' });
  const steps = h('ol', { class: 'timeline' });
  const streaming = h('div', { class: 'streaming', hidden: true });
  const final = h('section', { class: 'final' });
  const status = statusLine();
  const actions = h('div', { class: 'actions' });
  clear(root, head, actions, status, steps, streaming, final);

  async function render(): Promise<void> {
    const [task, tl] = await Promise.all([
      get<Task>(p(`/tasks/${encodeURIComponent(taskId)}`)),
      get<Timeline>(p(`/tasks/${encodeURIComponent(taskId)}/timeline`)),
    ]);
    clear(
      head,
      h('a', { href: '#/tasks' }, '← tasks'),
      h('h1', {}, `Task of ${task.agent_id}`),
      badge(task.status),
      h('span', { class: 'mono' }, task.task_id),
      h(
        'span',
        { class: 'task-duration' },
        task.status === 'pending' || task.status === 'running'
          ? `running for ${ms(between(task.created_at, new Date().toISOString()))}`
          : `took ${ms(between(task.created_at, task.updated_at))}`,
      ),
    );
    clear(
      actions,
      task.status === 'pending' || task.status === 'running'
        ? actionButton(
            'Cancel task',
            'cancel-task',
            async () => {
              await post(p(`/tasks/${encodeURIComponent(taskId)}/cancel`), {
                reason: 'canceled from the console',
              });
              await render();
              return 'task canceled';
            },
            status,
          )
        : null,
    );
    const results = new Map(tl.calls.map((c) => [c.tool_call_id, c]));
    // The input shows as the turn's first (user) card once a worker has picked the task up.
    const items: HTMLElement[] = tl.turn
      ? []
      : [h('li', { class: 'ev input' }, h('b', {}, 'input'), json(task.input))];
    let step = 0;
    // A step took from the card before it (the user's message, or the last tool result).
    let since: string | null = tl.cards[0]?.created_at ?? null;
    for (const card of tl.cards) {
      if (card.kind === 'message') {
        const role = (card.content as { role?: unknown } | null)?.role;
        const text = textOf(card.content);
        if (role === 'user') {
          items.push(
            h(
              'li',
              { class: 'ev user', 'data-kind': 'user' },
              h('b', {}, 'user'),
              h('p', { class: 'text' }, text || JSON.stringify(card.content)),
            ),
          );
          since = card.created_at;
          continue;
        }
        step += 1;
        items.push(
          h(
            'li',
            { class: 'ev step', 'data-kind': 'step' },
            h('b', {}, `model step ${step}`),
            h('small', {}, ` ${time(card.created_at)}`),
            took(between(since, card.created_at)),
            text ? markdown(text) : null,
          ),
        );
        since = card.created_at;
      } else if (card.kind === 'tool.call') {
        const c = card.tool_call_id ? results.get(card.tool_call_id) : undefined;
        const args = (card.content as { arguments?: unknown } | null)?.arguments;
        items.push(
          h(
            'li',
            { class: 'ev call', 'data-kind': 'call' },
            h('b', {}, `tool call ${c?.tool_name ?? ''}`),
            c ? badge(c.status) : null,
            took(
              (c?.result?.content as { duration_ms?: number } | undefined)?.duration_ms ??
                between(c?.published_at ?? card.created_at, c?.result?.created_at),
            ),
            h('details', {}, h('summary', {}, 'arguments'), json(args)),
            c?.result
              ? h(
                  'details',
                  { open: true },
                  h('summary', {}, 'result card'),
                  cardView(c.result.content),
                )
              : h('p', { class: 'muted' }, 'waiting for the result…'),
          ),
        );
        if (c?.result) since = c.result.created_at;
      }
    }
    steps.replaceChildren(...items);
    clear(
      final,
      h('h2', {}, 'Final card'),
      ...(task.final_card
        ? [
            finalAnswer(task.final_card.content),
            h(
              'details',
              {},
              h('summary', {}, 'final card'),
              json(task.final_card.content, 'json final-card'),
            ),
          ]
        : [h('p', { class: 'muted' }, tl.turn ? `turn ${tl.turn.status}` : 'not started')]),
    );
    if (task.final_card) streaming.hidden = true;
  }

  await render();
  let pending: ReturnType<typeof setTimeout> | undefined;
  const later = () => {
    clearTimeout(pending);
    pending = setTimeout(() => void render(), 150);
  };
  void follow(
    (e: LiveEvent) => {
      const b = e.body ?? {};
      if (e.kind === 'agent.chunk' && typeof b['delta'] === 'string') {
        streaming.hidden = false;
        streaming.textContent += b['delta'];
      } else if (e.kind.startsWith('agent.') || e.kind === 'tool.result') {
        if (e.kind === 'agent.step') streaming.textContent = '';
        later();
      }
    },
    signal,
    (up) => up && later(),
  );
}

/** The final card's answer as text or Markdown (with its images), or its error. */
function finalAnswer(content: unknown): HTMLElement {
  const c = (content ?? {}) as { result?: unknown; text?: unknown; error?: { message?: string } };
  if (c.error?.message) return h('p', { class: 'error' }, c.error.message);
  return answerView(c.result ?? c.text ?? '');
}
