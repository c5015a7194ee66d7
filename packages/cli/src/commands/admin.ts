// What needed curl and the admin key: `projects list|show|create` (the admin key: the local
// stack's, TOOLMESH_ADMIN_KEY, or --api-key), and a project's `keys`, `profiles` and
// `bus-credentials` (its key). A key or a bus credential is shown once, when it is made: `keys
// create` prints the key, `bus-credentials create` writes the .creds file (-o) or prints it.
import { writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { Context } from '../context.ts';
import { ExitCode, usageError } from '../exit.ts';
import { printJson, printLine, printTable } from '../output.ts';
import { projectOf } from '../settings.ts';
import { collect } from './mcp.ts';
import { intOption } from './parse.ts';
import type { Run } from './threads.ts';

type Row = Record<string, unknown>;
const seg = encodeURIComponent;
const base = (ctx: Context) => `/v1/projects/${seg(projectOf(ctx.settings))}`;

function show(ctx: Context, body: unknown, rows: Row[], columns: string[]): number {
  if (ctx.settings.json) printJson(ctx.io, body);
  else printTable(ctx.io, rows, columns);
  return ExitCode.ok;
}

/** The key for deployment-wide routes: an explicit --api-key / TOOLMESH_API_KEY, else the admin key. */
function adminKey(ctx: Context): string | undefined {
  const s = ctx.settings;
  return s.apiKeyExplicit ? s.apiKey : (s.adminKey ?? s.apiKey);
}

export async function projectsList(ctx: Context, f: { limit?: string }) {
  const limit = intOption(f.limit, '--limit');
  const body = await ctx.api.request<{ projects: Row[] }>({
    path: '/v1/projects',
    key: adminKey(ctx),
    ...(limit !== undefined ? { query: { limit } } : {}),
  });
  return show(ctx, body, body.projects, ['id', 'name', 'created_at']);
}

export async function projectsShow(ctx: Context, id: string) {
  const body = await ctx.api.request<Row>({
    path: `/v1/projects/${seg(id)}`,
    key: adminKey(ctx),
  });
  return show(ctx, body, [body], ['id', 'name', 'created_at']);
}

export async function projectsCreate(
  ctx: Context,
  id: string,
  f: { name?: string; keyName?: string },
) {
  const body = await ctx.api.request<{ project: Row; key: Row & { key: string } }>({
    method: 'POST',
    path: '/v1/projects',
    key: adminKey(ctx),
    json: { id, name: f.name ?? id, ...(f.keyName !== undefined ? { key_name: f.keyName } : {}) },
  });
  if (ctx.settings.json) printJson(ctx.io, body);
  else {
    printLine(ctx.io, body.key.key);
    ctx.io.stderr.write(
      `project ${id} created; its API key is shown this once (above): TOOLMESH_PROJECT=${id} TOOLMESH_API_KEY=<key>\n`,
    );
  }
  return ExitCode.ok;
}

export async function keysList(ctx: Context) {
  const body = await ctx.api.request<{ keys: Row[] }>({ path: `${base(ctx)}/keys` });
  return show(ctx, body, body.keys, [
    'key_id',
    'name',
    'prefix',
    'role',
    'created_at',
    'revoked_at',
  ]);
}

export async function keysCreate(ctx: Context, name: string, f: { role?: string }) {
  const body = await ctx.api.request<Row & { key: string }>({
    method: 'POST',
    path: `${base(ctx)}/keys`,
    json: { name, ...(f.role !== undefined ? { role: f.role } : {}) },
  });
  if (ctx.settings.json) printJson(ctx.io, body);
  else {
    printLine(ctx.io, body.key);
    ctx.io.stderr.write(
      `key ${String(body['key_id'])} (${String(body['role'])}): shown this once\n`,
    );
  }
  return ExitCode.ok;
}

export async function keysRevoke(ctx: Context, keyId: string) {
  await ctx.api.request({ method: 'DELETE', path: `${base(ctx)}/keys/${seg(keyId)}` });
  if (ctx.settings.json) printJson(ctx.io, { key_id: keyId, revoked: true });
  else printLine(ctx.io, `key ${keyId} revoked`);
  return ExitCode.ok;
}

export interface ProfileFlags {
  tool?: string[];
  internal?: string[];
  model?: string;
  prompt?: string;
  name?: string;
}

function profileBody(f: ProfileFlags): Row {
  return {
    ...(f.tool !== undefined ? { allowed_tools: f.tool } : {}),
    ...(f.internal !== undefined ? { allowed_internal_tools: f.internal } : {}),
    ...(f.model !== undefined ? { model: f.model === '' ? null : f.model } : {}),
    ...(f.prompt !== undefined ? { system_prompt: f.prompt } : {}),
  };
}

export async function profilesList(ctx: Context) {
  const body = await ctx.api.request<{ profiles: Row[] }>({ path: `${base(ctx)}/profiles` });
  const rows = body.profiles.map((p) => ({
    ...p,
    tools: (p['allowed_tools'] as string[]).join(','),
    internal: (p['allowed_internal_tools'] as string[]).join(','),
  }));
  return show(ctx, body, rows, ['name', 'model', 'tools', 'internal']);
}

export async function profilesShow(ctx: Context, name: string) {
  const body = await ctx.api.request<Row>({ path: `${base(ctx)}/profiles/${seg(name)}` });
  if (ctx.settings.json) printJson(ctx.io, body);
  else printLine(ctx.io, JSON.stringify(body, null, 2));
  return ExitCode.ok;
}

export async function profilesCreate(ctx: Context, name: string, f: ProfileFlags) {
  const body = await ctx.api.request<Row>({
    method: 'POST',
    path: `${base(ctx)}/profiles`,
    json: { name, ...profileBody(f) },
  });
  if (ctx.settings.json) printJson(ctx.io, body);
  else printLine(ctx.io, `profile ${name} created`);
  return ExitCode.ok;
}

export async function profilesUpdate(ctx: Context, name: string, f: ProfileFlags) {
  const json = { ...profileBody(f), ...(f.name !== undefined ? { name: f.name } : {}) };
  if (Object.keys(json).length === 0)
    throw usageError('nothing to update: pass --tool, --internal, --model, --prompt or --name');
  const body = await ctx.api.request<Row>({
    method: 'PATCH',
    path: `${base(ctx)}/profiles/${seg(name)}`,
    json,
  });
  if (ctx.settings.json) printJson(ctx.io, body);
  else printLine(ctx.io, `profile ${String(body['name'])} updated`);
  return ExitCode.ok;
}

export async function profilesDelete(ctx: Context, name: string) {
  await ctx.api.request({ method: 'DELETE', path: `${base(ctx)}/profiles/${seg(name)}` });
  if (ctx.settings.json) printJson(ctx.io, { name, deleted: true });
  else printLine(ctx.io, `profile ${name} deleted`);
  return ExitCode.ok;
}

export async function busCredentialsCreate(ctx: Context, name: string, f: { output?: string }) {
  const body = await ctx.api.request<Row & { creds: string; id: string }>({
    method: 'POST',
    path: `${base(ctx)}/bus-credentials`,
    json: { name },
  });
  if (f.output !== undefined) {
    await writeFile(f.output, body.creds, { mode: 0o600 });
    ctx.io.stderr.write(
      `bus credential ${body.id} written to ${f.output}: TOOLMESH_BUS_CREDS=${f.output}\n`,
    );
  } else if (ctx.settings.json) printJson(ctx.io, body);
  else ctx.io.stdout.write(body.creds);
  return ExitCode.ok;
}

export async function busCredentialsList(ctx: Context) {
  const body = await ctx.api.request<{ credentials: Row[] }>({
    path: `${base(ctx)}/bus-credentials`,
  });
  return show(ctx, body, body.credentials, ['id', 'name', 'created_at', 'revoked_at']);
}

export async function busCredentialsRevoke(ctx: Context, id: string) {
  const body = await ctx.api.request<Row>({
    method: 'DELETE',
    path: `${base(ctx)}/bus-credentials/${seg(id)}`,
  });
  if (ctx.settings.json) printJson(ctx.io, body);
  else printLine(ctx.io, `bus credential ${id} revoked`);
  return ExitCode.ok;
}

export function addAdminCommands(program: Command, run: Run): void {
  const projects = program
    .command('projects')
    .description(
      'projects of the deployment (the admin key: the local stack’s or TOOLMESH_ADMIN_KEY)',
    );
  projects
    .command('list')
    .description('every project (a project key sees its own)')
    .option('--limit <n>')
    .action(run((ctx, f: { limit?: string }) => projectsList(ctx, f)));
  projects
    .command('show')
    .argument('<id>')
    .action(run((ctx, id: string) => projectsShow(ctx, id)));
  projects
    .command('create')
    .description('create a project; prints its first API key (shown this once)')
    .argument('<id>', '1-64 characters of [A-Za-z0-9_-]')
    .option('--name <text>', 'display name (default: the id)')
    .option('--key-name <text>', 'name of its first key (default: default)')
    .action(
      run((ctx, id: string, f: { name?: string; keyName?: string }) => projectsCreate(ctx, id, f)),
    );

  const keys = program.command('keys').description("the project's API keys");
  keys
    .command('list')
    .description('every key, revoked ones too (never the key itself)')
    .action(run((ctx) => keysList(ctx)));
  keys
    .command('create')
    .description('make a key; prints it (shown this once)')
    .argument('<name>')
    .option('--role <role>', 'admin (default): everything in the project; caller: calls and tasks')
    .action(run((ctx, name: string, f: { role?: string }) => keysCreate(ctx, name, f)));
  keys
    .command('revoke')
    .alias('delete')
    .description('revoke a key: it stops working at once')
    .argument('<key_id>')
    .action(run((ctx, id: string) => keysRevoke(ctx, id)));

  const profiles = program
    .command('profiles')
    .description("the project's agent profiles: model, system prompt and allowed tools");
  profiles.command('list').action(run((ctx) => profilesList(ctx)));
  profiles
    .command('show')
    .argument('<name>')
    .action(run((ctx, name: string) => profilesShow(ctx, name)));
  const profileOptions = (cmd: Command) =>
    cmd
      .option(
        '--tool <pattern>',
        'an allowed tool, e.g. skills.* or builtin.echo (repeatable)',
        collect,
      )
      .option(
        '--internal <tool>',
        'an allowed internal tool, e.g. submit_result (repeatable)',
        collect,
      )
      .option('--model <name>', "the model (default: the worker's; '' clears it on update)")
      .option('--prompt <text>', 'the system prompt');
  profileOptions(
    profiles.command('create').description('create a profile').argument('<name>'),
  ).action(run((ctx, name: string, f: ProfileFlags) => profilesCreate(ctx, name, f)));
  profileOptions(
    profiles
      .command('update')
      .description('change a profile; a list given replaces the old one')
      .argument('<name>')
      .option('--name <new>', 'rename it (agents follow)'),
  ).action(run((ctx, name: string, f: ProfileFlags) => profilesUpdate(ctx, name, f)));
  profiles
    .command('delete')
    .description('delete a profile no agent uses')
    .argument('<name>')
    .action(run((ctx, name: string) => profilesDelete(ctx, name)));

  const bus = program
    .command('bus-credentials')
    .description("the project's NATS credentials, for the CLI, the SDK or any NATS client");
  bus
    .command('create')
    .description('issue one: writes the .creds file (-o), or prints it (shown this once)')
    .argument('<name>', 'what it is for')
    .option('-o, --output <file>', 'write the .creds file here (mode 0600)')
    .action(run((ctx, name: string, f: { output?: string }) => busCredentialsCreate(ctx, name, f)));
  bus.command('list').action(run((ctx) => busCredentialsList(ctx)));
  bus
    .command('revoke')
    .description('revoke one: its connections are closed at once')
    .argument('<id>')
    .action(run((ctx, id: string) => busCredentialsRevoke(ctx, id)));
}
