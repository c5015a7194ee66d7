// Approvals: what waits for a person. The tool calls held for approval (tool, arguments, what
// required it, when it times out) with Approve and Deny (a reason is required to deny), and the
// MCP tools whose server changed their definition, held until someone approves the new one
// (the approved and the proposed text side by side). Refreshed every few seconds. Another state,
// a time range (when the call was held) or an id (of the approval or of its call) finds an
// approval past the newest page.
import { ApiError, get, p, post } from '../api.ts';
import { clear, h, json, table, time } from '../dom.ts';

interface Approval {
  approval_id: string;
  tool_call_id: string;
  tool_name: string;
  agent_id: string | null;
  arguments: Record<string, unknown> | null;
  required_by: { source: string; mode: string };
  status: string;
  requested_at: string;
  expires_at: string;
}

interface HeldTool {
  name: string;
  description: string;
  pending_definition: {
    current: { description: string; parameters: unknown };
    proposed: { description: string; parameters: unknown };
    hash: string;
    detected_at: string;
  } | null;
}

const STATES = ['pending', 'any', 'approved', 'denied', 'timed_out', 'canceled'];
const APPROVAL_ID = /^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$/i;

/** A datetime-local input's value as an ISO instant; undefined when empty. */
const instant = (el: HTMLInputElement): string | undefined =>
  el.value ? new Date(el.value).toISOString() : undefined;

export async function approvalsPage(root: HTMLElement, signal: AbortSignal): Promise<void> {
  const calls = h('section', { 'data-section': 'calls' });
  const held = h('section', { 'data-section': 'definitions' });
  const status = h('p', { class: 'error', role: 'alert' });
  const state = h(
    'select',
    { name: 'state', 'aria-label': 'state' },
    ...STATES.map((s) => h('option', { value: s }, s === 'any' ? 'any state' : s)),
  ) as HTMLSelectElement;
  const range = (name: string, label: string) =>
    h('input', {
      type: 'datetime-local',
      name,
      step: 1,
      'aria-label': label,
      title: label,
    }) as HTMLInputElement;
  const from = range('from', 'held from');
  const to = range('to', 'held before');
  const find = h('input', {
    name: 'find',
    placeholder: 'find by approval or call id',
    'aria-label': 'find an approval by id',
  }) as HTMLInputElement;
  for (const el of [state, from, to, find])
    el.addEventListener('change', () => {
      status.textContent = '';
      load().catch((err: unknown) => {
        status.textContent = err instanceof ApiError ? `${err.code}: ${err.message}` : String(err);
      });
    });
  clear(
    root,
    h(
      'div',
      { class: 'toolbar' },
      h('h1', {}, 'Approvals'),
      state,
      h('label', { class: 'range' }, 'from ', from),
      h('label', { class: 'range' }, 'to ', to),
      find,
    ),
    status,
    calls,
    held,
  );

  /** The approvals the filters name: one by id, else a page of a state and time range. */
  async function approvalsShown(): Promise<Approval[]> {
    const id = find.value.trim();
    if (id && APPROVAL_ID.test(id)) {
      try {
        return [await get<Approval>(p(`/approvals/${id}`))];
      } catch (err) {
        if (!(err instanceof ApiError && err.status === 404)) throw err;
      }
    }
    const q = new URLSearchParams({ status: state.value, limit: '200' });
    if (id) {
      q.set('tool_call_id', id);
      q.set('status', 'any');
    }
    const [f, t] = [instant(from), instant(to)];
    if (f) q.set('from', f);
    if (t) q.set('to', t);
    return (await get<{ approvals: Approval[] }>(p(`/approvals?${q.toString()}`))).approvals;
  }

  const act = async (fn: () => Promise<unknown>) => {
    status.textContent = '';
    try {
      await fn();
    } catch (err) {
      status.textContent = err instanceof ApiError ? `${err.code}: ${err.message}` : String(err);
    }
    await load();
  };

  function callRow(a: Approval): HTMLElement {
    const reason = h('input', {
      name: 'reason',
      placeholder: 'reason (required to deny)',
      'aria-label': 'reason',
    }) as HTMLInputElement;
    const decide = (d: 'approve' | 'deny') => () =>
      void act(() => {
        const text = reason.value.trim();
        if (d === 'deny' && !text) throw new Error('give a reason to deny');
        return post(p(`/approvals/${a.approval_id}/${d}`), text ? { reason: text } : {});
      });
    return h(
      'tr',
      { 'data-approval': a.approval_id },
      h('td', { class: 'mono' }, a.tool_name),
      h('td', { class: 'mono' }, a.tool_call_id),
      h('td', {}, a.agent_id ?? '—'),
      h('td', {}, json(a.arguments)),
      h('td', {}, `${a.required_by.source} (${a.required_by.mode})`),
      h('td', {}, time(a.requested_at)),
      h('td', {}, time(a.expires_at)),
      a.status !== 'pending'
        ? h('td', { class: 'state' }, a.status)
        : h(
            'td',
            {},
            reason,
            h(
              'button',
              { type: 'button', 'data-action': 'approve', onclick: decide('approve') },
              'Approve',
            ),
            h('button', { type: 'button', 'data-action': 'deny', onclick: decide('deny') }, 'Deny'),
          ),
    );
  }

  function heldRow(t: HeldTool): HTMLElement {
    const d = t.pending_definition!;
    return h(
      'tr',
      { 'data-held-tool': t.name },
      h('td', { class: 'mono' }, t.name),
      h('td', {}, d.current.description),
      h('td', { class: 'proposed' }, d.proposed.description),
      h('td', {}, time(d.detected_at)),
      h(
        'td',
        {},
        h(
          'button',
          {
            type: 'button',
            'data-action': 'approve-definition',
            onclick: () =>
              void act(() =>
                post(p(`/tools/${encodeURIComponent(t.name)}/approve-definition`), {
                  hash: d.hash,
                }),
              ),
          },
          'Approve definition',
        ),
      ),
    );
  }

  // Filters change while a load is in flight: only the newest load's answer is shown.
  let generation = 0;
  async function load(): Promise<void> {
    const mine = ++generation;
    const [approvals, { tools }] = await Promise.all([
      approvalsShown(),
      get<{ tools: HeldTool[] }>(p('/tools?origin=mcp&limit=500')),
    ]);
    if (mine !== generation) return;
    const changed = tools.filter((t) => t.pending_definition !== null);
    const filtered = find.value.trim() || from.value || to.value || state.value !== 'pending';
    clear(
      calls,
      h(
        'h2',
        {},
        filtered
          ? `Approvals found (${approvals.length})`
          : `Tool calls waiting (${approvals.length})`,
      ),
      approvals.length === 0
        ? h(
            'p',
            { class: 'muted' },
            filtered ? 'no approval matches' : 'no call waits for approval',
          )
        : table(
            ['tool', 'call', 'agent', 'arguments', 'required by', 'requested', 'times out', ''],
            approvals.map(callRow),
          ),
    );
    clear(
      held,
      h('h2', {}, `Changed tool definitions (${changed.length})`),
      changed.length === 0
        ? h('p', { class: 'muted' }, 'no MCP tool is held for a changed definition')
        : table(
            ['tool', 'approved description', 'proposed description', 'detected', ''],
            changed.map(heldRow),
          ),
    );
  }
  await load();
  const timer = setInterval(() => void load().catch(() => undefined), 5000);
  signal.addEventListener('abort', () => clearInterval(timer));
}
