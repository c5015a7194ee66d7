// Tools: the project's registry (each tool with its input schema, and a form built from that
// schema to try it: the call goes through POST /executions and its card shows here), and its
// MCP servers with their connection state and Refresh, Disable and Enable.
import { get, p, post } from '../api.ts';
import { actionButton, statusLine } from '../actions.ts';
import { badge, clear, h, json, table } from '../dom.ts';
import { cardView } from '../render.ts';
import { field, type Schema } from '../schema-form.ts';

type Row = Record<string, unknown>;
const str = (v: unknown): string =>
  typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean'
    ? String(v)
    : v == null
      ? '—'
      : JSON.stringify(v);

/** A form for the tool's arguments, built from its JSON schema, that runs the tool. */
function tryForm(tool: string, schema: Schema): HTMLElement {
  const props = Object.entries(schema.properties ?? {});
  const required = new Set(schema.required ?? []);
  const fields = props.map(([name, s]) => ({ name, ...field(name, s, required.has(name)) }));
  // A schema naming no properties (any object) takes its arguments as JSON.
  const raw =
    props.length === 0 ? field('arguments', { description: 'a JSON object' }, false) : undefined;
  const status = statusLine();
  const result = h('div', { class: 'try-result' });
  const run = actionButton(
    'Run',
    'run',
    async () => {
      const args: Record<string, unknown> = {};
      for (const f of fields) {
        const v = f.read();
        if (v === undefined && required.has(f.name)) throw new Error(`${f.name} is required`);
        if (v !== undefined) args[f.name] = v;
      }
      const all = raw ? ((raw.read() as Record<string, unknown> | undefined) ?? {}) : args;
      const out = await post<{
        execution: { id: string; status: string };
        card: { content: unknown } | null;
      }>(p('/executions'), { tool, arguments: all, wait: true });
      clear(
        result,
        h(
          'p',
          {},
          badge(out.execution.status),
          ' ',
          h(
            'a',
            { href: `#/executions/${encodeURIComponent(out.execution.id)}` },
            out.execution.id,
          ),
        ),
        out.card ? cardView(out.card.content) : h('p', { class: 'muted' }, 'still running'),
      );
      return `ran ${tool}: ${out.execution.status}`;
    },
    status,
  );
  const form = h(
    'form',
    { class: 'try', 'data-tool': tool },
    ...fields.map((f) => f.el),
    raw?.el,
    run,
    status,
    result,
  );
  // Enter in a field runs the tool, as the button does.
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    run.click();
  });
  return form;
}

export async function toolsPage(root: HTMLElement): Promise<void> {
  const status = statusLine();
  const servers = h('section', { 'data-section': 'mcp-servers' });
  const { tools } = await get<{ tools: Row[] }>(p('/tools?limit=500'));

  async function loadServers(): Promise<void> {
    const { mcp_servers } = await get<{ mcp_servers: Row[] }>(p('/mcp-servers'));
    const act = (name: string, verb: 'refresh' | 'enable' | 'disable') => async () => {
      const out = await post<Row>(p(`/mcp-servers/${encodeURIComponent(name)}/${verb}`));
      await loadServers();
      const r = out['refresh'] as { added?: string[]; disabled?: string[] } | undefined;
      return verb === 'disable'
        ? `${name} disabled (${str((out['tools_disabled'] as string[] | undefined)?.length ?? 0)} tools off)`
        : `${name} ${verb === 'enable' ? 'enabled' : 'refreshed'}: ${str(out['tool_count'])} tools` +
            (r ? ` (${r.added?.length ?? 0} added, ${r.disabled?.length ?? 0} gone)` : '');
    };
    clear(
      servers,
      h('h2', {}, 'MCP servers'),
      status,
      mcp_servers.length === 0
        ? h('p', { class: 'muted' }, 'no MCP servers')
        : table(
            ['server', 'transport', 'state', 'tools', 'last error', ''],
            mcp_servers.map((s) => {
              const name = str(s['name']);
              const on = s['enabled'] !== false;
              return h(
                'tr',
                { 'data-server': name, 'data-enabled': String(on) },
                h('td', { class: 'mono' }, name),
                h('td', {}, str(s['transport'])),
                h('td', {}, on ? badge(str(s['state'])) : badge('disabled')),
                h('td', {}, str(s['tool_count'])),
                h('td', { class: 'last-error' }, str(s['last_error'])),
                h(
                  'td',
                  { class: 'actions' },
                  on ? actionButton('Refresh', 'refresh', act(name, 'refresh'), status) : null,
                  on
                    ? actionButton('Disable', 'disable', act(name, 'disable'), status)
                    : actionButton('Enable', 'enable', act(name, 'enable'), status),
                  h('details', {}, h('summary', {}, 'details'), json(s)),
                ),
              );
            }),
          ),
    );
  }

  clear(
    root,
    h(
      'div',
      { class: 'toolbar' },
      h('h1', {}, 'Tools'),
      h('span', {}, `${tools.length} registered`),
    ),
    table(
      ['tool', 'kind', 'enabled', 'description', ''],
      tools.map((t) => {
        const name = str(t['name']);
        const schema = (t['parameters'] ?? {}) as Schema;
        // The form opens in a full-width row under the tool's.
        let formRow: HTMLElement | undefined;
        const open = h(
          'button',
          {
            type: 'button',
            'data-action': 'try',
            disabled: t['enabled'] === false,
            onclick: () => {
              if (formRow) {
                formRow.remove();
                formRow = undefined;
                return;
              }
              formRow = h(
                'tr',
                { class: 'try-row', 'data-try': name },
                h('td', { colspan: 5 }, tryForm(name, schema)),
              );
              row.after(formRow);
            },
          },
          'Try',
        );
        const row = h(
          'tr',
          { 'data-tool': name },
          h('td', { class: 'mono' }, name),
          h('td', {}, str(t['kind'] ?? t['category'])),
          h('td', {}, t['enabled'] === false ? badge('disabled') : badge('enabled')),
          h('td', {}, str(t['description'])),
          h(
            'td',
            { class: 'actions' },
            open,
            h('details', {}, h('summary', {}, 'input schema'), json(schema)),
          ),
        );
        return row;
      }),
    ),
    servers,
  );
  await loadServers();
}
