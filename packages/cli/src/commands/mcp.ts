// `toolmesh mcp add|list|refresh|disable|enable|remove` (also `toolmesh mcp-servers ...`): a
// project's MCP servers over the api. `add` takes a
// URL (streamable HTTP) or a command with its arguments (stdio, run inside a sandbox session);
// the api asks the tools service to discover the tools, so add and refresh print what it found
// and exit 1 when the server could not be reached.
import type { Context } from '../context.ts';
import { ExitCode, usageError } from '../exit.ts';
import { printJson, printLine, printTable } from '../output.ts';
import { projectOf } from '../settings.ts';

type Row = Record<string, unknown>;
export interface McpServerOut extends Row {
  name: string;
  enabled: boolean;
  state: 'pending' | 'connected' | 'error';
  last_error: string | null;
  tool_count: number;
  refresh?: {
    added: string[];
    updated: string[];
    disabled: string[];
    refused: { tool: string; reason: string }[];
  };
}

const base = (ctx: Context) =>
  `/v1/projects/${encodeURIComponent(projectOf(ctx.settings))}/mcp-servers`;
/** The api waits up to a minute for a discovery; leave it room to answer. */
const DISCOVERY_WAIT_MS = 75_000;

export interface McpAddFlags {
  header?: string[];
  env?: string[];
  bearerSecret?: string;
  headerSecret?: string;
}

/** `K=V` pairs of a repeated flag into an object. */
function pairs(values: string[] | undefined, flag: string): Record<string, string> | undefined {
  if (!values || values.length === 0) return undefined;
  const out: Record<string, string> = {};
  for (const v of values) {
    const eq = v.indexOf('=');
    if (eq <= 0) throw usageError(`${flag} takes NAME=VALUE, got ${JSON.stringify(v)}`);
    out[v.slice(0, eq)] = v.slice(eq + 1);
  }
  return out;
}

export const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

export async function mcpAdd(
  ctx: Context,
  name: string,
  target: string,
  args: string[],
  f: McpAddFlags,
): Promise<number> {
  const isUrl = /^https?:\/\//i.test(target);
  let body: Row;
  if (isUrl) {
    if (args.length > 0) throw usageError('a URL server takes no arguments');
    if (f.env) throw usageError('--env is for stdio servers (a command)');
    if (f.bearerSecret && f.headerSecret) {
      throw usageError('give --bearer-secret or --header-secret, not both');
    }
    let auth: Row | undefined;
    if (f.bearerSecret) auth = { type: 'bearer', secret: f.bearerSecret };
    if (f.headerSecret) {
      const [header, secret] = Object.entries(pairs([f.headerSecret], '--header-secret')!)[0]!;
      auth = { type: 'header', header, secret };
    }
    const headers = pairs(f.header, '--header');
    body = {
      name,
      transport: 'http',
      url: target,
      ...(headers ? { headers } : {}),
      ...(auth ? { auth } : {}),
    };
  } else {
    if (f.header || f.bearerSecret || f.headerSecret) {
      throw usageError('--header and the secrets are for URL servers');
    }
    const env = pairs(f.env, '--env');
    body = { name, transport: 'stdio', command: target, args, ...(env ? { env } : {}) };
  }
  const server = await ctx.api.request<McpServerOut>({
    method: 'POST',
    path: base(ctx),
    json: body,
    timeoutMs: DISCOVERY_WAIT_MS,
  });
  return mcpReport(ctx, server);
}

export async function mcpList(ctx: Context): Promise<number> {
  const body = await ctx.api.request<{ mcp_servers: McpServerOut[] }>({ path: base(ctx) });
  if (ctx.settings.json) printJson(ctx.io, body);
  else {
    printTable(
      ctx.io,
      body.mcp_servers.map((s) => ({ ...s, endpoint: s['url'] ?? s['command'] })),
      ['name', 'transport', 'endpoint', 'state', 'tool_count', 'last_error'],
    );
  }
  return ExitCode.ok;
}

export async function mcpRefresh(ctx: Context, name: string): Promise<number> {
  const server = await ctx.api.request<McpServerOut>({
    method: 'POST',
    path: `${base(ctx)}/${encodeURIComponent(name)}/refresh`,
    timeoutMs: DISCOVERY_WAIT_MS,
  });
  return mcpReport(ctx, server);
}

export async function mcpDisable(ctx: Context, name: string): Promise<number> {
  const s = await ctx.api.request<McpServerOut & { tools_disabled: string[] }>({
    method: 'POST',
    path: `${base(ctx)}/${encodeURIComponent(name)}/disable`,
  });
  if (ctx.settings.json) printJson(ctx.io, s);
  else {
    printLine(
      ctx.io,
      `${s.name}: disabled, ${s.tools_disabled.length} tools switched off, connections closed`,
    );
    for (const t of s.tools_disabled) printLine(ctx.io, `  - ${t}`);
  }
  return ExitCode.ok;
}

export async function mcpEnable(ctx: Context, name: string): Promise<number> {
  const s = await ctx.api.request<McpServerOut & { tools_enabled: string[] }>({
    method: 'POST',
    path: `${base(ctx)}/${encodeURIComponent(name)}/enable`,
    timeoutMs: DISCOVERY_WAIT_MS,
  });
  if (!ctx.settings.json) {
    printLine(ctx.io, `${s.name}: enabled, ${s.tools_enabled.length} tools switched on again`);
  }
  return mcpReport(ctx, s);
}

export async function mcpRemove(ctx: Context, name: string): Promise<number> {
  await ctx.api.request({ method: 'DELETE', path: `${base(ctx)}/${encodeURIComponent(name)}` });
  if (ctx.settings.json) printJson(ctx.io, { deleted: name });
  else printLine(ctx.io, `removed MCP server ${name} and its tools`);
  return ExitCode.ok;
}

/** Prints a server after a discovery; exit 1 when it ended in state error. */
export function mcpReport(ctx: Context, s: McpServerOut): number {
  if (ctx.settings.json) printJson(ctx.io, s);
  else {
    printLine(ctx.io, `${s.name}: ${s.state}, ${s.tool_count} tools`);
    const r = s.refresh;
    if (r) {
      for (const t of r.added) printLine(ctx.io, `  + ${t}`);
      for (const t of r.updated) printLine(ctx.io, `  ~ ${t}`);
      for (const t of r.disabled)
        printLine(ctx.io, `  - ${t} (disabled: the server no longer lists it)`);
      for (const t of r.refused) printLine(ctx.io, `  ! ${t.tool}: ${t.reason}`);
    }
  }
  if (s.state === 'error') {
    ctx.io.stderr.write(`toolmesh: ${s.name}: ${s.last_error ?? 'discovery failed'}\n`);
    return ExitCode.failed;
  }
  return ExitCode.ok;
}
