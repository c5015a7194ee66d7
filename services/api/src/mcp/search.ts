// Tool search for projects with many tools: past `[api] mcp_search_threshold` visible tools,
// tools/list offers two tools instead of hundreds: `search_tools` (a query -> the matching tools
// with their schemas) and `call_tool` (a name and arguments). Neither name can be a registry
// tool's MCP name (those hold `__` or end in `_h` and a hash). The tools found stay callable
// by their own names too.
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ToolRecord } from '@toolmesh/store';
import type { NameTable } from './names.ts';

export const SEARCH_TOOLS = 'search_tools';
export const CALL_TOOL = 'call_tool';
const DEFAULT_LIMIT = 10;
const MAX_LIMIT = 50;

export const searchTools: Tool[] = [
  {
    name: SEARCH_TOOLS,
    title: 'Search the tools',
    description:
      'Finds tools of this project by words of their name or description; returns each with its name and input schema. Call one with call_tool, or by its name.',
    inputSchema: {
      type: 'object',
      properties: {
        query: { type: 'string', minLength: 1, description: 'words to look for' },
        limit: { type: 'integer', minimum: 1, maximum: MAX_LIMIT, default: DEFAULT_LIMIT },
      },
      required: ['query'],
      additionalProperties: false,
    },
    annotations: { readOnlyHint: true, openWorldHint: false },
  },
  {
    name: CALL_TOOL,
    title: 'Call a tool',
    description: 'Calls a tool found with search_tools: its name and its arguments.',
    inputSchema: {
      type: 'object',
      properties: {
        name: { type: 'string', minLength: 1, description: 'the name search_tools gave' },
        arguments: { type: 'object', description: "the tool's arguments" },
      },
      required: ['name'],
      additionalProperties: false,
    },
  },
];

/** Tools matching the most query words (name, title, description; case-insensitive) first. */
export function search(
  table: NameTable<ToolRecord>,
  query: string,
  limit = DEFAULT_LIMIT,
): { mcpName: string; tool: ToolRecord }[] {
  const words = query
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w.length > 0);
  if (words.length === 0) return [];
  const scored = table.entries.flatMap((e) => {
    const name = `${e.mcpName} ${e.tool.name}`.toLowerCase();
    const text = e.tool.description.toLowerCase();
    // A word in the name counts more than one in the description.
    const score = words.reduce(
      (n, w) => n + (name.includes(w) ? 2 : 0) + (text.includes(w) ? 1 : 0),
      0,
    );
    return score > 0 ? [{ e, score }] : [];
  });
  scored.sort((a, b) => b.score - a.score || a.e.mcpName.localeCompare(b.e.mcpName));
  return scored.slice(0, Math.min(Math.max(1, limit), MAX_LIMIT)).map((s) => s.e);
}
