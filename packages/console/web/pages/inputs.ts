// Inputs: what the project's MCP servers asked during calls that no MCP client could answer
// (elicitation). Each pending request shows the server's message and a form built from the
// schema it asked for, with Accept (the form's content), Decline and Cancel; the call goes on
// once answered, or fails input_expired at its deadline. Refreshed every few seconds; a
// request being filled in is left alone by the refresh.
import { get, p, post } from '../api.ts';
import { actionButton, statusLine } from '../actions.ts';
import { clear, h, table, time } from '../dom.ts';
import { field, type Schema } from '../schema-form.ts';

interface InputRequest {
  input_request_id: string;
  tool_call_id: string;
  tool_name: string;
  server: string;
  message: string;
  requested_schema: Schema;
  status: string;
  requested_at: string;
  expires_at: string;
}

export async function inputsPage(root: HTMLElement, signal: AbortSignal): Promise<void> {
  const list = h('section', { 'data-section': 'input-requests' });
  clear(root, h('div', { class: 'toolbar' }, h('h1', {}, 'Inputs')), list);
  // Rows kept across refreshes, so what someone is typing is not wiped.
  const rows = new Map<string, HTMLElement>();

  function row(r: InputRequest): HTMLElement {
    const schema = r.requested_schema;
    const required = new Set(schema.required ?? []);
    const fields = Object.entries(schema.properties ?? {}).map(([name, s]) => ({
      name,
      ...field(name, s, required.has(name)),
    }));
    const status = statusLine();
    const answer = (action: 'accept' | 'decline' | 'cancel') => async () => {
      let content: Record<string, unknown> | undefined;
      if (action === 'accept') {
        content = {};
        for (const f of fields) {
          const v = f.read();
          if (v === undefined && required.has(f.name)) throw new Error(`${f.name} is required`);
          if (v !== undefined) content[f.name] = v;
        }
      }
      await post(p(`/input-requests/${r.input_request_id}/answer`), {
        action,
        ...(content ? { content } : {}),
      });
      await load();
      return `${action}: sent to ${r.server}`;
    };
    const form = h(
      'form',
      { class: 'try', 'data-input-form': r.input_request_id },
      ...fields.map((f) => f.el),
      actionButton('Accept', 'accept', answer('accept'), status),
      actionButton('Decline', 'decline', answer('decline'), status),
      actionButton('Cancel', 'cancel', answer('cancel'), status),
      status,
    );
    form.addEventListener('submit', (e) => e.preventDefault());
    return h(
      'tr',
      { 'data-input-request': r.input_request_id },
      h('td', { class: 'mono' }, r.tool_name),
      h('td', { class: 'mono' }, r.tool_call_id),
      h('td', {}, r.message),
      h('td', {}, time(r.requested_at)),
      h('td', {}, time(r.expires_at)),
      h('td', {}, form),
    );
  }

  async function load(): Promise<void> {
    const { input_requests } = await get<{ input_requests: InputRequest[] }>(
      p('/input-requests?status=pending&limit=200'),
    );
    const live = new Set(input_requests.map((r) => r.input_request_id));
    for (const id of rows.keys()) if (!live.has(id)) rows.delete(id);
    const shown = input_requests.map((r) => {
      let el = rows.get(r.input_request_id);
      if (!el) rows.set(r.input_request_id, (el = row(r)));
      return el;
    });
    clear(
      list,
      h('h2', {}, `Questions waiting (${input_requests.length})`),
      input_requests.length === 0
        ? h('p', { class: 'muted' }, 'no MCP server waits for an answer')
        : table(['tool', 'call', 'message', 'asked', 'expires', ''], shown),
    );
  }
  await load();
  const timer = setInterval(() => void load().catch(() => undefined), 5000);
  signal.addEventListener('abort', () => clearInterval(timer));
}
