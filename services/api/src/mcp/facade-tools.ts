// What a facade scope sees: the tools of a project (or of one agent's tool set, or of one MCP
// server under the server's own names), as MCP tools, and the registry row a tools/call names.
import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import { LONG_RUNNING_TOOLS } from '@toolmesh/skills';
import type { AgentsStore, RegistryStore, ToolRecord } from '@toolmesh/store';
import { buildNameTable, mcpToolName, type NameTable } from './names.ts';
import { searchTools } from './search.ts';
import type { ToolCache } from './tool-cache.ts';

export interface FacadeScope {
  project: string;
  /** Limits the tools to this agent's tool set. */
  agent?: string | undefined;
  /** Who answers for this client when it decides an approval (`mcp:<key id>`). */
  caller?: string | undefined;
  /**
   * One MCP server of the project (its own endpoint): only its tools, under the names the
   * server gives them.
   */
  server?: string | undefined;
}

/** The spec of an MCP tool, when the row is one (server, the upstream's name, `$schema`). */
export function mcpSpecOf(
  t: ToolRecord,
): { server: string; tool: string; schema?: string } | undefined {
  if (t.origin !== 'mcp') return undefined;
  const { server, tool, schema } = t.spec as { server?: unknown; tool?: unknown; schema?: unknown };
  if (typeof server !== 'string' || typeof tool !== 'string') return undefined;
  return { server, tool, ...(typeof schema === 'string' ? { schema } : {}) };
}

/** The tools of one MCP server under the server's own names (they are unique on the server). */
function serverNameTable(tools: readonly ToolRecord[], server: string): NameTable<ToolRecord> {
  const byName = new Map<string, ToolRecord>();
  const entries: { mcpName: string; tool: ToolRecord }[] = [];
  for (const tool of tools) {
    const spec = mcpSpecOf(tool);
    if (spec?.server !== server || byName.has(spec.tool)) continue;
    byName.set(spec.tool, tool);
    entries.push({ mcpName: spec.tool, tool });
  }
  return { entries, resolve: (n) => byName.get(n) };
}

/** Does a profile's `allowed_tools` (a name, or `<target>.*`) admit a tool? As the agent worker. */
function allows(patterns: readonly string[], name: string): boolean {
  return patterns.some((p) =>
    p.endsWith('.*') ? name.startsWith(p.slice(0, -1)) && name.length > p.length - 1 : p === name,
  );
}

/** Past this registered timeout a call outlives most MCP clients' default request timeout. */
const LONG_TIMEOUT_MS = 60_000;

/**
 * Task support: every call is a durable mesh call (its card answers any instance), so every tool
 * may run as a task, and every tool says `optional`. None is `required`, which would lock out
 * clients without Tasks (2025-06-18 and older, most clients today); none is `forbidden`, which
 * would take a durable, re-readable result from clients that ask for one. The long-running
 * skills tools and any tool registered with a timeout over 60 s are where a client should use a
 * task; they are marked in `_meta["io.toolmesh/long-running"]`.
 */
const TASK_SUPPORT = 'optional';

/** Does a call of this tool run longer than a client's default request timeout? */
export function isLongRunning(t: ToolRecord): boolean {
  const timeout = (t.options as { timeout_ms?: unknown }).timeout_ms;
  return (
    LONG_RUNNING_TOOLS.has(t.name) || (typeof timeout === 'number' && timeout > LONG_TIMEOUT_MS)
  );
}

export class UnknownAgentError extends Error {
  readonly code = 'not_found';
  constructor(agent: string) {
    super(`agent ${JSON.stringify(agent)} not found`);
    this.name = 'UnknownAgentError';
  }
}
export interface ToolView {
  /** The tools a scope may see, by MCP name (throws UnknownAgentError for an unknown agent). */
  visibleTools: (scope: FacadeScope) => Promise<NameTable<ToolRecord>>;
  /** visibleTools, with an unknown agent an invalid-params error (the client's mistake). */
  visible: (scope: FacadeScope) => Promise<NameTable<ToolRecord>>;
  /** The tool an MCP name stands for, if the scope may see it. */
  resolve: (
    scope: FacadeScope,
    name: string,
    table?: NameTable<ToolRecord>,
  ) => Promise<ToolRecord | undefined>;
  toMcpTool: (mcpName: string, t: ToolRecord) => Tool;
  /** tools/list of a scope. */
  list: (scope: FacadeScope) => Promise<{ tools: Tool[] }>;
}

export function createToolView(deps: {
  store: RegistryStore & AgentsStore;
  /** Registry rows by name, for the direct lookup of a call's tool. */
  tools: ToolCache;
  /** More visible tools than this: tools/list offers search_tools and call_tool only. */
  searchThreshold: number;
}): ToolView {
  const { store, tools, searchThreshold } = deps;

  /**
   * The tools a scope may see. For an agent, the same rule as the agent worker's toolset
   * (services/agent-worker/src/toolset.ts): enabled tools its profile admits and, when tools
   * are attached to it, only those; an agent without a profile sees none.
   */
  async function visibleTools(scope: FacadeScope): Promise<NameTable<ToolRecord>> {
    const all = (await store.tools.list(scope.project, {})).filter((t) => t.enabled);
    const table = (tools: ToolRecord[]) =>
      scope.server === undefined ? buildNameTable(tools) : serverNameTable(tools, scope.server);
    if (scope.agent === undefined) return table(all);
    const agent = await store.agents.get(scope.project, scope.agent);
    if (!agent) throw new UnknownAgentError(scope.agent);
    const profile = agent.profile
      ? await store.profiles.get(scope.project, agent.profile)
      : undefined;
    const attached = new Set(
      ((await store.agents.listTools(scope.project, scope.agent)) ?? []).map((t) => t.name),
    );
    const allowed = profile?.allowed_tools ?? [];
    return table(
      all.filter((t) => allows(allowed, t.name) && (attached.size === 0 || attached.has(t.name))),
    );
  }

  function toMcpTool(mcpName: string, t: ToolRecord): Tool {
    // The input schema as the server sent it: the registry keeps its `$schema` in the spec.
    const dialect = mcpSpecOf(t)?.schema;
    return {
      name: mcpName,
      title: t.name,
      description: t.description,
      inputSchema: (dialect
        ? { $schema: dialect, ...t.parameters }
        : t.parameters) as Tool['inputSchema'],
      ...(t.output_schema ? { outputSchema: t.output_schema as Tool['outputSchema'] } : {}),
      ...(Object.keys(t.annotations).length > 0 ? { annotations: t.annotations } : {}),
      execution: { taskSupport: TASK_SUPPORT },
      _meta: {
        'io.toolmesh/tool': t.name,
        ...(isLongRunning(t) ? { 'io.toolmesh/long-running': true } : {}),
      },
    };
  }

  /**
   * The tool an MCP name stands for, if the scope may see it. Without an agent, a plain name
   * (`target__tool`) is looked up directly, one row instead of the project's list, and accepted
   * only if the tool's own MCP name is that name (plain names map one to one); every other name
   * goes through the table. The direct lookup is cached (tool-cache.ts): it is on the path of
   * every call, and the registry changes rarely.
   */
  async function resolve(
    scope: FacadeScope,
    name: string,
    table?: NameTable<ToolRecord>,
  ): Promise<ToolRecord | undefined> {
    if (!table && scope.agent === undefined && scope.server !== undefined) {
      // The registry name of a server's tool is `<server>.<name>` whenever its name is an id.
      const t = await tools.get(scope.project, `${scope.server}.${name}`);
      const spec = t && mcpSpecOf(t);
      if (t?.enabled && spec?.server === scope.server && spec.tool === name) return t;
    } else if (!table && scope.agent === undefined) {
      const sep = name.indexOf('__');
      if (sep > 0) {
        const t = await tools.get(scope.project, `${name.slice(0, sep)}.${name.slice(sep + 2)}`);
        if (t?.enabled && mcpToolName(t.name) === name) return t;
      }
    }
    return (table ?? (await visible(scope))).resolve(name);
  }

  /** An unknown agent is the client's mistake: an invalid-params error, not an internal one. */
  async function visible(scope: FacadeScope): Promise<NameTable<ToolRecord>> {
    try {
      return await visibleTools(scope);
    } catch (err) {
      if (err instanceof UnknownAgentError)
        throw new McpError(ErrorCode.InvalidParams, err.message);
      throw err;
    }
  }

  return {
    visibleTools,
    visible,
    resolve,
    toMcpTool,
    list: async (scope) => {
      const table = await visible(scope);
      if (table.entries.length > searchThreshold) return { tools: searchTools };
      return { tools: table.entries.map((e) => toMcpTool(e.mcpName, e.tool)) };
    },
  };
}
