// Approvals: what waits for a person. The tool calls held for approval (tool, arguments, what
// required it, when it times out) with Approve and Deny (a reason is required to deny), and the
// MCP tools whose server changed their definition, held until someone approves the new one
// (the approved and the proposed text side by side). Refreshed every few seconds.
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

export async function approvalsPage(root: HTMLElement, signal: AbortSignal): Promise<void> {
  const calls = h('section', { 'data-section': 'calls' });
  const held = h('section', { 'data-section': 'definitions' });
  const status = h('p', { class: 'error', role: 'alert' });
  clear(root, h('div', { class: 'toolbar' }, h('h1', {}, 'Approvals')), status, calls, held);

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
      h(
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

  async function load(): Promise<void> {
    const [{ approvals }, { tools }] = await Promise.all([
      get<{ approvals: Approval[] }>(p('/approvals?status=pending&limit=200')),
      get<{ tools: HeldTool[] }>(p('/tools?origin=mcp&limit=500')),
    ]);
    const changed = tools.filter((t) => t.pending_definition !== null);
    clear(
      calls,
      h('h2', {}, `Tool calls waiting (${approvals.length})`),
      approvals.length === 0
        ? h('p', { class: 'muted' }, 'no call waits for approval')
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
