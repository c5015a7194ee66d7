// Executions: the newest page from the history route (keyset-paged: "older" follows
// next_cursor), filtered by tool, status, agent, session and a time range, kept live by the
// project's events: a published call appears at once, and each call or result re-reads that
// execution. An id typed in "find" opens that call. A row opens the call: arguments, result
// card (its images inline), timing, attempts, cost, trace id, the caller's context and who
// started it, with what can be done to it: cancel, approve or deny, run it again.
import { ApiError, follow, get, p, type LiveEvent } from '../api.ts';
import { statusLine } from '../actions.ts';
import { executionActions } from './execution-actions.ts';
import { badge, clear, h, json, ms, table, time } from '../dom.ts';
import { cardView } from '../render.ts';

export interface Execution {
  id: string;
  tool: string;
  channel: string;
  status: string;
  error_code: string | null;
  agent_id: string | null;
  attempts: number;
  card_id: string | null;
  created_at: string;
  started_at: string;
  finished_at: string | null;
  duration_ms: number | null;
  cost: { amount: number; currency: string } | null;
  arguments?: Record<string, unknown> | null;
  context?: { session_id: string | null; metadata: Record<string, unknown> | null } | null;
  key_id?: string | null;
  credential_id?: string | null;
}
interface Page {
  executions: Execution[];
  next_cursor: string | null;
  total: number;
}
export interface Detail {
  execution: Execution;
  card: { card_id: string; created_at: string; content: unknown } | null;
}

const STATUSES = [
  '',
  'queued',
  'awaiting_approval',
  'running',
  'succeeded',
  'failed',
  'timeout',
  'canceled',
];

/** A datetime-local input's value as an ISO instant; undefined when empty. */
const instant = (el: HTMLInputElement): string | undefined =>
  el.value ? new Date(el.value).toISOString() : undefined;

export async function executionsPage(
  root: HTMLElement,
  signal: AbortSignal,
  arg?: string,
): Promise<void> {
  const rows = new Map<string, Execution>();
  const liveArgs = new Map<string, unknown>();
  const tool = h('input', { name: 'tool', placeholder: 'tool (target.name)' }) as HTMLInputElement;
  const status = h(
    'select',
    { name: 'status' },
    ...STATUSES.map((s) => h('option', { value: s }, s || 'any status')),
  ) as HTMLSelectElement;
  const agent = h('input', { name: 'agent', placeholder: 'agent' }) as HTMLInputElement;
  const session = h('input', { name: 'session', placeholder: 'session' }) as HTMLInputElement;
  const find = h('input', {
    name: 'find',
    placeholder: 'find by id',
    'aria-label': 'find an execution by id',
  }) as HTMLInputElement;
  const from = h('input', {
    type: 'datetime-local',
    name: 'from',
    step: 1,
    'aria-label': 'started from',
    title: 'started from',
  }) as HTMLInputElement;
  const to = h('input', {
    type: 'datetime-local',
    name: 'to',
    step: 1,
    'aria-label': 'started before',
    title: 'started before',
  }) as HTMLInputElement;
  const findError = h('span', { class: 'error find-error', role: 'alert' });
  let openId: string | undefined;
  // What an action said about an execution (a re-run names its original), kept across re-renders.
  const notes = new Map<string, string>();
  const live = h('span', { class: 'live' }, 'connecting…');
  const total = h('span', { class: 'total' });
  const body = h('tbody');
  const more = h('button', { type: 'button', class: 'more', hidden: true }, 'Older');
  const detail = h('aside', { class: 'detail', hidden: true });
  let cursor: string | null = null;
  let count = 0;
  const showCount = () => (total.textContent = `${count} executions`);

  const filters = () => {
    const q = new URLSearchParams({ limit: '50' });
    if (tool.value.trim()) q.set('tool', tool.value.trim());
    if (status.value) q.set('status', status.value);
    if (agent.value.trim()) q.set('agent', agent.value.trim());
    if (session.value.trim()) q.set('session_id', session.value.trim());
    const [f, t] = [instant(from), instant(to)];
    if (f) q.set('from', f);
    if (t) q.set('to', t);
    return q;
  };
  const matches = (e: Execution) =>
    (!tool.value.trim() || e.tool === tool.value.trim()) &&
    (!status.value || e.status === status.value) &&
    (!agent.value.trim() || e.agent_id === agent.value.trim()) &&
    (!session.value.trim() || e.context?.session_id === session.value.trim()) &&
    (!from.value || Date.parse(e.started_at) >= Date.parse(instant(from)!)) &&
    (!to.value || Date.parse(e.started_at) < Date.parse(instant(to)!));

  function rowOf(e: Execution): HTMLElement {
    return h(
      'tr',
      { 'data-id': e.id, 'data-status': e.status, class: 'row', onclick: () => void open(e.id) },
      h('td', {}, time(e.started_at)),
      h('td', { class: 'tool' }, e.tool),
      h('td', {}, badge(e.status)),
      h('td', { class: 'mono error-code' }, e.error_code ?? ''),
      h('td', {}, e.agent_id ?? '—'),
      h('td', {}, ms(e.duration_ms)),
      h('td', {}, e.attempts),
      h('td', { class: 'mono' }, e.id.slice(0, 12)),
    );
  }

  function upsert(e: Execution, atTop: boolean): void {
    rows.set(e.id, e);
    const old = body.querySelector(`tr[data-id="${CSS.escape(e.id)}"]`);
    if (!matches(e)) return void old?.remove();
    const tr = rowOf(e);
    if (old) old.replaceWith(tr);
    else if (atTop) {
      body.prepend(tr);
      count += 1;
      showCount();
    } else body.append(tr);
  }

  async function load(reset: boolean): Promise<void> {
    const q = filters();
    if (!reset && cursor) q.set('cursor', cursor);
    const page = await get<Page>(p(`/executions?${q}`));
    if (reset) {
      body.replaceChildren();
      rows.clear();
    }
    for (const e of page.executions) upsert(e, false);
    cursor = page.next_cursor;
    more.hidden = !cursor;
    count = page.total;
    showCount();
  }

  async function refresh(id: string, fallback?: Execution): Promise<void> {
    try {
      const d = await get<Detail>(p(`/executions/${encodeURIComponent(id)}`));
      upsert(d.execution, !rows.has(id));
      if (openId === id && !detail.hidden) void open(id).catch(() => undefined);
    } catch (err) {
      if (err instanceof ApiError && err.status === 404 && fallback) upsert(fallback, true);
    }
  }

  function onEvent(ev: LiveEvent): void {
    const b = ev.body ?? {};
    const id = typeof b['tool_call_id'] === 'string' ? b['tool_call_id'] : undefined;
    if (!id) return;
    if (ev.kind === 'tool.call') {
      liveArgs.set(id, b['arguments']);
      const now = new Date().toISOString();
      void refresh(id, {
        id,
        tool: typeof b['tool_name'] === 'string' ? b['tool_name'] : ev.name,
        channel: ev.channel,
        status: 'queued',
        error_code: null,
        agent_id: null,
        attempts: 0,
        card_id: null,
        created_at: now,
        started_at: now,
        finished_at: null,
        duration_ms: null,
        cost: null,
      });
    } else if (ev.kind === 'tool.result') void refresh(id);
  }

  async function open(id: string, note = notes.get(id)): Promise<void> {
    const d = await get<Detail>(p(`/executions/${encodeURIComponent(id)}`));
    let args: unknown = d.execution.arguments ?? liveArgs.get(id);
    if (args === undefined || args === null) {
      args = await get<{ arguments: unknown }>(p(`/executions/${encodeURIComponent(id)}/arguments`))
        .then((r) => r.arguments)
        .catch(() => undefined);
    }
    const e = d.execution;
    openId = e.id;
    const content = (d.card?.content ?? {}) as Record<string, unknown>;
    const trace = (content['trace_id'] as string | undefined) ?? null;
    const startedBy = e.key_id
      ? `API key ${e.key_id}`
      : e.credential_id
        ? `bus credential ${e.credential_id}`
        : '—';
    const status = statusLine();
    if (note) {
      status.dataset['state'] = 'ok';
      status.textContent = note;
    }
    detail.hidden = false;
    detail.dataset['id'] = e.id;
    clear(
      detail,
      h(
        'header',
        {},
        h('h2', {}, e.tool),
        badge(e.status),
        h(
          'button',
          {
            type: 'button',
            class: 'close',
            'aria-label': 'close',
            onclick: () => {
              detail.hidden = true;
              openId = undefined;
            },
          },
          '×',
        ),
      ),
      h(
        'div',
        { class: 'actions' },
        ...(await executionActions(e, status, async (r) => {
          notes.set(r.id, `re-run of ${e.id}`);
          upsert(r, !rows.has(r.id));
          await open(r.id);
        })),
      ),
      status,
      h(
        'dl',
        {},
        h('dt', {}, 'call id'),
        h('dd', { class: 'mono' }, e.id),
        h('dt', {}, 'channel'),
        h('dd', {}, e.channel),
        h('dt', {}, 'agent'),
        h('dd', {}, e.agent_id ?? '—'),
        h('dt', {}, 'session'),
        h('dd', { class: 'session' }, e.context?.session_id ?? '—'),
        h('dt', {}, 'started by'),
        h('dd', { class: 'mono started-by' }, startedBy),
        h('dt', {}, 'queued'),
        h('dd', {}, e.created_at),
        h('dt', {}, 'started'),
        h('dd', {}, e.started_at),
        h('dt', {}, 'finished'),
        h('dd', {}, e.finished_at ?? '—'),
        h('dt', {}, 'duration'),
        h('dd', {}, ms(e.duration_ms)),
        h('dt', {}, 'attempts'),
        h('dd', {}, e.attempts),
        h('dt', {}, 'cost'),
        h('dd', {}, e.cost ? `${e.cost.amount} ${e.cost.currency}` : '—'),
        h('dt', {}, 'trace id'),
        h('dd', { class: 'mono' }, trace ?? '—'),
        h('dt', {}, 'error'),
        h('dd', {}, e.error_code ?? '—'),
      ),
      h('h3', {}, 'Arguments'),
      args === undefined || args === null
        ? h('p', { class: 'muted' }, 'not recorded (a call rejected before they were read)')
        : json(args),
      ...(e.context?.metadata
        ? [h('h3', {}, 'Context metadata'), json(e.context.metadata, 'json context')]
        : []),
      h('h3', {}, 'Result card'),
      d.card ? cardView(d.card.content) : h('p', { class: 'muted' }, 'no result yet'),
    );
  }

  async function findById(): Promise<void> {
    findError.textContent = '';
    const id = find.value.trim();
    if (!id) return;
    try {
      await open(id);
    } catch (err) {
      detail.hidden = true;
      openId = undefined;
      findError.textContent =
        err instanceof ApiError && (err.status === 404 || err.status === 400)
          ? `no execution ${id} in this project`
          : String(err);
    }
  }

  for (const el of [tool, agent, session, from, to])
    el.addEventListener('change', () => void load(true));
  find.addEventListener('change', () => void findById());
  status.addEventListener('change', () => void load(true));
  more.addEventListener('click', () => void load(false));
  clear(
    root,
    h(
      'div',
      { class: 'toolbar' },
      h('h1', {}, 'Executions'),
      tool,
      status,
      agent,
      session,
      h('label', { class: 'range' }, 'from ', from),
      h('label', { class: 'range' }, 'to ', to),
      find,
      findError,
      total,
      live,
    ),
    h(
      'div',
      { class: 'split' },
      h(
        'div',
        {},
        table(
          ['started', 'tool', 'status', 'error', 'agent', 'duration', 'attempts', 'id'],
          [],
          'executions',
        ),
        more,
      ),
      detail,
    ),
  );
  root
    .querySelector('table.executions')!
    .replaceChild(body, root.querySelector('table.executions tbody')!);
  await load(true);
  // `#/executions/<id>` opens that execution, as "find" does.
  if (arg) {
    find.value = arg;
    await findById();
  }
  void follow(onEvent, signal, (up) => {
    live.textContent = up ? '● live' : 'reconnecting…';
    live.className = up ? 'live on' : 'live';
  });
}
