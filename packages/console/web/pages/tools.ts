// Tools: the project's registry (each tool with its input schema) and its MCP servers with
// their connection state.
import { get, p } from '../api.ts';
import { badge, clear, h, json, table } from '../dom.ts';

type Row = Record<string, unknown>;
const str = (v: unknown): string =>
  typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean'
    ? String(v)
    : v == null
      ? '—'
      : JSON.stringify(v);

export async function toolsPage(root: HTMLElement): Promise<void> {
  const [{ tools }, { mcp_servers }] = await Promise.all([
    get<{ tools: Row[] }>(p('/tools?limit=500')),
    get<{ mcp_servers: Row[] }>(p('/mcp-servers')),
  ]);
  clear(
    root,
    h(
      'div',
      { class: 'toolbar' },
      h('h1', {}, 'Tools'),
      h('span', {}, `${tools.length} registered`),
    ),
    table(
      ['tool', 'kind', 'enabled', 'description', 'schema'],
      tools.map((t) =>
        h(
          'tr',
          { 'data-tool': str(t['name']) },
          h('td', { class: 'mono' }, str(t['name'])),
          h('td', {}, str(t['kind'] ?? t['category'])),
          h('td', {}, t['enabled'] === false ? badge('disabled') : badge('enabled')),
          h('td', {}, str(t['description'])),
          h(
            'td',
            {},
            h(
              'details',
              {},
              h('summary', {}, 'input schema'),
              json(t['input_schema'] ?? t['schema'] ?? t),
            ),
          ),
        ),
      ),
    ),
    h('h2', {}, 'MCP servers'),
    mcp_servers.length === 0
      ? h('p', { class: 'muted' }, 'no MCP servers')
      : table(
          ['server', 'transport', 'state', 'tools', 'last error', ''],
          mcp_servers.map((s) =>
            h(
              'tr',
              { 'data-server': str(s['name']) },
              h('td', { class: 'mono' }, str(s['name'])),
              h('td', {}, str(s['transport'])),
              h('td', {}, badge(str(s['state']))),
              h('td', {}, str(s['tool_count'])),
              h('td', {}, str(s['last_error'])),
              h('td', {}, h('details', {}, h('summary', {}, 'details'), json(s))),
            ),
          ),
        ),
  );
}
