// `toolmesh mcp-servers import <file|catalog-name>` and `toolmesh catalog list`: MCP servers from
// the MCP Registry's server.json format. A file is read here and sent inline (a registry API
// answer `{server: {...}}` is unwrapped); anything else names an entry of the operator's catalog
// (`GET /v1/catalog`). `--secret VAR=secret` maps a declared environment variable or header to a
// project secret; `--var NAME=value` gives a plain value.
import { readFile, stat } from 'node:fs/promises';
import type { Context } from '../context.ts';
import { CliError, ExitCode, usageError } from '../exit.ts';
import { printJson, printLine, printTable } from '../output.ts';
import { projectOf } from '../settings.ts';
import { mcpReport, type McpServerOut } from './mcp.ts';

/** The api waits up to a minute for a discovery (a package install included); leave it room. */
const DISCOVERY_WAIT_MS = 75_000;

export interface McpImportFlags {
  name?: string;
  secret?: string[];
  var?: string[];
  use?: string;
  index?: string;
}

function pairs(values: string[] | undefined, flag: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const v of values ?? []) {
    const eq = v.indexOf('=');
    if (eq <= 0) throw usageError(`${flag} takes NAME=VALUE, got ${JSON.stringify(v)}`);
    out[v.slice(0, eq)] = v.slice(eq + 1);
  }
  return out;
}

const isFile = (path: string) =>
  stat(path).then(
    (s) => s.isFile(),
    () => false,
  );

async function readServerJson(path: string): Promise<Record<string, unknown>> {
  const text = await readFile(path, 'utf8');
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new CliError(
      ExitCode.usage,
      'invalid_server_json',
      `${path} is not JSON: ${(err as Error).message}`,
    );
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw new CliError(ExitCode.usage, 'invalid_server_json', `${path} is not a JSON object`);
  }
  // The registry's API wraps an entry as {server: {...}, _meta: {...}}.
  const inner = (doc as { server?: unknown }).server;
  if (typeof inner === 'object' && inner !== null && !('name' in doc)) {
    return inner as Record<string, unknown>;
  }
  return doc as Record<string, unknown>;
}

export async function mcpImport(ctx: Context, source: string, f: McpImportFlags): Promise<number> {
  if (f.use !== undefined && f.use !== 'remote' && f.use !== 'package') {
    throw usageError('--use is remote or package');
  }
  const index = f.index === undefined ? undefined : Number(f.index);
  if (index !== undefined && !(Number.isInteger(index) && index >= 0)) {
    throw usageError('--index is a number from 0');
  }
  let from: Record<string, unknown>;
  if (await isFile(source)) from = { server: await readServerJson(source) };
  else if (source.endsWith('.json')) {
    throw new CliError(ExitCode.notFound, 'not_found', `cannot read ${source}: no such file`);
  } else from = { catalog: source };
  const server = await ctx.api.request<McpServerOut & { import?: ImportInfo }>({
    method: 'POST',
    path: `/v1/projects/${encodeURIComponent(projectOf(ctx.settings))}/mcp-servers/import`,
    json: {
      ...from,
      ...(f.name ? { name: f.name } : {}),
      secrets: pairs(f.secret, '--secret'),
      variables: pairs(f.var, '--var'),
      ...(f.use ? { use: f.use } : {}),
      ...(index !== undefined ? { index } : {}),
    },
    timeoutMs: DISCOVERY_WAIT_MS,
  });
  if (!ctx.settings.json && server.import) {
    const i = server.import;
    printLine(
      ctx.io,
      `${i.outcome} ${server.name} from ${i.source.name}@${i.source.version} (${i.chosen.kind} ${i.chosen.type})`,
    );
    for (const w of i.warnings) printLine(ctx.io, `  warning: ${w}`);
  }
  return mcpReport(ctx, server);
}

interface ImportInfo {
  outcome: 'created' | 'updated';
  source: { name: string; version: string; catalog?: string };
  chosen: { kind: string; index: number; type: string };
  warnings: string[];
}

interface CatalogOut {
  configured: boolean;
  entries: {
    name: string;
    description: string;
    version: string;
    transports: string[];
    required_variables: { name: string; kind: string; is_secret: boolean }[];
  }[];
  invalid: { file: string; error: string }[];
}

export async function catalogList(ctx: Context): Promise<number> {
  const body = await ctx.api.request<CatalogOut>({ path: '/v1/catalog' });
  if (ctx.settings.json) {
    printJson(ctx.io, body);
    return ExitCode.ok;
  }
  if (!body.configured) {
    printLine(ctx.io, 'no catalog: the operator has not set [catalog] dir');
    return ExitCode.ok;
  }
  printTable(
    ctx.io,
    body.entries.map((e) => ({
      ...e,
      transports: e.transports.join(','),
      required: e.required_variables
        .map((v) => (v.is_secret ? `${v.name} (secret)` : v.name))
        .join(','),
    })),
    ['name', 'version', 'transports', 'required', 'description'],
  );
  for (const bad of body.invalid) {
    ctx.io.stderr.write(`toolmesh: catalog file ${bad.file} is invalid: ${bad.error}\n`);
  }
  return ExitCode.ok;
}
