// Secrets and HTTP tools of a project, over the api. A secret's value is taken from an
// environment variable or a file, never required on the command line (where `ps` and shell
// history would keep it); `--value` exists for throwaway setups. An HTTP tool is built from flags
// or read whole from a JSON file (the body of POST /tools, `kind` set for you).
import { readFile } from 'node:fs/promises';
import type { Context } from '../context.ts';
import { CliError, ExitCode, usageError } from '../exit.ts';
import { printJson, printLine, printTable } from '../output.ts';
import { projectOf } from '../settings.ts';
import { jsonObject, jsonObjectFile } from './parse.ts';

const p = (ctx: Context) => `/v1/projects/${encodeURIComponent(projectOf(ctx.settings))}`;

export interface SecretSetFlags {
  value?: string;
  fromEnv?: string;
  fromFile?: string;
}

export async function secretsSet(
  ctx: Context,
  name: string,
  f: SecretSetFlags,
  env: Readonly<Record<string, string | undefined>>,
): Promise<number> {
  const given = [f.value, f.fromEnv, f.fromFile].filter((v) => v !== undefined).length;
  if (given !== 1)
    throw usageError('give the value with exactly one of --from-env, --from-file or --value');
  let value: string;
  if (f.fromEnv !== undefined) {
    const v = env[f.fromEnv];
    if (v === undefined || v === '')
      throw usageError(`environment variable ${f.fromEnv} is not set`);
    value = v;
  } else if (f.fromFile !== undefined) {
    value = await readFile(f.fromFile, 'utf8').catch((err: unknown) => {
      throw new CliError(
        ExitCode.notFound,
        'not_found',
        `cannot read ${f.fromFile}: ${(err as Error).message}`,
      );
    });
    value = value.replace(/\r?\n$/, '');
  } else {
    value = f.value!;
  }
  const body = await ctx.api.request<{ name: string; updated_at: string }>({
    method: 'PUT',
    path: `${p(ctx)}/secrets/${encodeURIComponent(name)}`,
    json: { value },
  });
  if (ctx.settings.json) printJson(ctx.io, body);
  else printLine(ctx.io, `secret ${body.name} stored`);
  return ExitCode.ok;
}

export async function secretsList(ctx: Context): Promise<number> {
  const body = await ctx.api.request<{ secrets: Record<string, unknown>[] }>({
    path: `${p(ctx)}/secrets`,
  });
  if (ctx.settings.json) printJson(ctx.io, body);
  else printTable(ctx.io, body.secrets, ['name', 'created_at', 'updated_at']);
  return ExitCode.ok;
}

export async function secretsDelete(ctx: Context, name: string): Promise<number> {
  await ctx.api.request({
    method: 'DELETE',
    path: `${p(ctx)}/secrets/${encodeURIComponent(name)}`,
  });
  if (!ctx.settings.json) printLine(ctx.io, `secret ${name} deleted`);
  else printJson(ctx.io, { deleted: name });
  return ExitCode.ok;
}

export interface AddHttpFlags {
  file?: string;
  url?: string;
  method?: string;
  description?: string;
  category?: string;
  parameters?: string;
  query?: string;
  body?: string;
  header?: string[];
  auth?: string;
  options?: string;
}

const list = (text: string | undefined) =>
  text === undefined
    ? undefined
    : text
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);

/** `bearer:<secret>`, `basic:<secret>` or `header:<Header-Name>:<secret>`. */
function parseAuth(text: string): Promise<Record<string, unknown>> | Record<string, unknown> {
  // An OAuth 2.0 config (grant, token URL and client secrets) does not fit in a flag: a file.
  if (text.startsWith('@')) return jsonObjectFile(text, '--auth');
  const [type, a, b] = text.split(':');
  if ((type === 'bearer' || type === 'basic') && a && b === undefined) return { type, secret: a };
  if (type === 'header' && a && b) return { type, header: a, secret: b };
  throw usageError(
    '--auth is bearer:<secret>, basic:<secret>, header:<Header-Name>:<secret> or @<file> (an OAuth 2.0 config)',
  );
}

export async function toolsAddHttp(
  ctx: Context,
  name: string | undefined,
  f: AddHttpFlags,
): Promise<number> {
  let tool: Record<string, unknown>;
  if (f.file !== undefined) {
    const text = await readFile(f.file, 'utf8').catch((err: unknown) => {
      throw new CliError(
        ExitCode.notFound,
        'not_found',
        `cannot read ${f.file}: ${(err as Error).message}`,
      );
    });
    tool = jsonObject(text, '--file');
    if (name !== undefined) tool['name'] = name;
    tool['kind'] = 'http';
  } else {
    if (name === undefined || f.url === undefined)
      throw usageError('give <name> and --url, or --file tool.json');
    const headers: Record<string, string> = {};
    for (const h of f.header ?? []) {
      const i = h.indexOf(':');
      if (i <= 0) throw usageError(`--header is Name:value, got ${JSON.stringify(h)}`);
      headers[h.slice(0, i).trim()] = h.slice(i + 1).trim();
    }
    const http: Record<string, unknown> = { method: (f.method ?? 'GET').toUpperCase(), url: f.url };
    if (Object.keys(headers).length > 0) http['headers'] = headers;
    const query = list(f.query);
    if (query) http['query'] = query;
    const body = list(f.body);
    if (body) http['body'] = body;
    if (f.auth !== undefined) http['auth'] = await parseAuth(f.auth);
    tool = {
      name,
      description: f.description ?? `${http['method'] as string} ${f.url}`,
      parameters: f.parameters ? jsonObject(f.parameters, '--parameters') : { type: 'object' },
      kind: 'http',
      http,
      ...(f.category ? { category: f.category } : {}),
      ...(f.options ? { options: jsonObject(f.options, '--options') } : {}),
    };
  }
  const created = await ctx.api.request<Record<string, unknown>>({
    method: 'POST',
    path: `${p(ctx)}/tools`,
    json: tool,
  });
  if (ctx.settings.json) printJson(ctx.io, created);
  else printLine(ctx.io, `tool ${String(created['name'])} registered (http)`);
  return ExitCode.ok;
}
