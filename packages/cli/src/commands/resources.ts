// The project's skills, agents and artifacts over the api: `skills list|show|activate`,
// `agents list|show|create|delete`, `artifacts show|get`. Each prints the api's JSON with
// --json, or a short table; `artifacts get` writes the bytes to a file (-o) or to stdout.
import { writeFile } from 'node:fs/promises';
import type { Context } from '../context.ts';
import { CliError, ExitCode, usageError } from '../exit.ts';
import { printJson, printLine, printTable } from '../output.ts';
import { projectOf } from '../settings.ts';

type Row = Record<string, unknown>;
const p = (ctx: Context) => `/v1/projects/${encodeURIComponent(projectOf(ctx.settings))}`;
const seg = encodeURIComponent;

function show(ctx: Context, body: unknown, rows: Row[], columns: string[]): number {
  if (ctx.settings.json) printJson(ctx.io, body);
  else printTable(ctx.io, rows, columns);
  return ExitCode.ok;
}

interface SkillDetails extends Row {
  name: string;
  description: string;
  enabled: boolean;
  location: string;
  active_version: string | null;
  version_list: { version: string; created_at: string; size_bytes: number; files: number }[];
}

export async function skillsList(ctx: Context): Promise<number> {
  const body = await ctx.api.request<{ skills: Row[] }>({ path: `${p(ctx)}/skills` });
  const rows = body.skills.map((s) => ({
    ...s,
    active: typeof s['active_version'] === 'string' ? s['active_version'].slice(0, 12) : null,
  }));
  return show(ctx, body, rows, ['name', 'active', 'enabled', 'versions', 'description']);
}

export async function skillsShow(ctx: Context, name: string): Promise<number> {
  const skill = await ctx.api.request<SkillDetails>({ path: `${p(ctx)}/skills/${seg(name)}` });
  if (ctx.settings.json) {
    printJson(ctx.io, skill);
    return ExitCode.ok;
  }
  printLine(ctx.io, `${skill.name}: ${skill.description}`);
  printLine(ctx.io, `enabled: ${String(skill.enabled)}  location: ${skill.location}`);
  printTable(
    ctx.io,
    skill.version_list.map((v) => ({
      ...v,
      active: v.version === skill.active_version ? '*' : '',
    })),
    ['active', 'version', 'files', 'size_bytes', 'created_at'],
  );
  return ExitCode.ok;
}

/** A version by its sha256 or a unique prefix of it (at least 6 characters). */
async function resolveVersion(ctx: Context, name: string, version: string): Promise<string> {
  if (/^[0-9a-f]{64}$/.test(version)) return version;
  if (!/^[0-9a-f]{6,63}$/.test(version))
    throw usageError(`version must be a sha256 or its first 6+ hex characters, got ${version}`);
  const skill = await ctx.api.request<SkillDetails>({ path: `${p(ctx)}/skills/${seg(name)}` });
  const found = skill.version_list.filter((v) => v.version.startsWith(version));
  if (found.length === 0)
    throw new CliError(ExitCode.notFound, 'not_found', `skill ${name} has no version ${version}`);
  if (found.length > 1)
    throw usageError(`version ${version} is ambiguous: ${found.length} versions start with it`);
  return found[0]!.version;
}

export async function skillsActivate(ctx: Context, name: string, version: string): Promise<number> {
  const full = await resolveVersion(ctx, name, version);
  const skill = await ctx.api.request<Row>({
    method: 'POST',
    path: `${p(ctx)}/skills/${seg(name)}/activate`,
    json: { version: full },
  });
  if (ctx.settings.json) printJson(ctx.io, skill);
  else printLine(ctx.io, `${name} ${full} is active`);
  return ExitCode.ok;
}

export async function agentsList(ctx: Context): Promise<number> {
  const body = await ctx.api.request<{ agents: Row[] }>({ path: `${p(ctx)}/agents` });
  return show(ctx, body, body.agents, ['id', 'name', 'profile', 'created_at']);
}

export async function agentsShow(ctx: Context, id: string): Promise<number> {
  const agent = await ctx.api.request<{
    id: string;
    name: string;
    profile: string | null;
    tools: Row[];
  }>({ path: `${p(ctx)}/agents/${seg(id)}` });
  if (ctx.settings.json) {
    printJson(ctx.io, agent);
    return ExitCode.ok;
  }
  printLine(ctx.io, `${agent.id} (${agent.name})`);
  printLine(ctx.io, `profile: ${agent.profile ?? '-'}`);
  if (agent.tools.length > 0) printTable(ctx.io, agent.tools, ['name', 'enabled', 'description']);
  else printLine(ctx.io, 'tools: those of its profile');
  return ExitCode.ok;
}

export async function agentsCreate(
  ctx: Context,
  id: string,
  f: { name?: string; profile?: string },
): Promise<number> {
  const agent = await ctx.api.request<Row>({
    method: 'POST',
    path: `${p(ctx)}/agents`,
    json: {
      id,
      ...(f.name !== undefined ? { name: f.name } : {}),
      ...(f.profile !== undefined ? { profile: f.profile } : {}),
    },
  });
  if (ctx.settings.json) printJson(ctx.io, agent);
  else printLine(ctx.io, `agent ${id} created`);
  return ExitCode.ok;
}

export async function agentsDelete(ctx: Context, id: string): Promise<number> {
  await ctx.api.request({ method: 'DELETE', path: `${p(ctx)}/agents/${seg(id)}` });
  if (ctx.settings.json) printJson(ctx.io, { deleted: id });
  else printLine(ctx.io, `agent ${id} deleted`);
  return ExitCode.ok;
}

export async function artifactsShow(ctx: Context, id: string): Promise<number> {
  const a = await ctx.api.request<Row>({ path: `${p(ctx)}/artifacts/${seg(id)}` });
  return show(ctx, a, [a], ['artifact_id', 'filename', 'mime', 'size_bytes', 'created_at']);
}

export async function artifactsGet(
  ctx: Context,
  id: string,
  f: { output?: string },
): Promise<number> {
  if (f.output === undefined && ctx.settings.json)
    throw usageError('--json needs -o <file>: the bytes cannot share stdout with JSON');
  const { bytes, contentType } = await ctx.api.download(`${p(ctx)}/artifacts/${seg(id)}/content`);
  if (f.output === undefined) {
    await new Promise<void>((resolve, reject) =>
      ctx.io.stdout.write(bytes, (err) => (err ? reject(err) : resolve())),
    );
    return ExitCode.ok;
  }
  await writeFile(f.output, bytes).catch((err: unknown) => {
    throw new CliError(
      ExitCode.failed,
      'write_failed',
      `cannot write ${f.output}: ${(err as Error).message}`,
    );
  });
  const saved = { artifact_id: id, path: f.output, size_bytes: bytes.length, mime: contentType };
  if (ctx.settings.json) printJson(ctx.io, saved);
  else printLine(ctx.io, `${f.output} (${bytes.length} bytes, ${contentType})`);
  return ExitCode.ok;
}
