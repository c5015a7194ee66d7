// Schedules of a project, over the api: a cron pattern that fires a tool call or an agent task.
import type { Context } from '../context.ts';
import { usageError } from '../exit.ts';
import { printJson, printLine, printTable } from '../output.ts';
import { projectOf } from '../settings.ts';
import { jsonObject } from './parse.ts';

const base = (ctx: Context) =>
  `/v1/projects/${encodeURIComponent(projectOf(ctx.settings))}/schedules`;

export interface ScheduleCreateFlags {
  cron: string;
  timezone?: string;
  tool?: string;
  args?: string;
  agent?: string;
  input?: string;
  channel?: string;
  catchUp?: string;
  paused?: boolean;
}

interface ScheduleOut {
  name: string;
  cron: string;
  timezone: string;
  tool: string | null;
  agent: string | null;
  paused: boolean;
  next_fire_at: string | null;
  last_fire_at: string | null;
  firings?: { tick_at: string; tool_call_id: string | null; task_id: string | null }[];
}

const row = (s: ScheduleOut) => ({
  name: s.name,
  cron: s.cron,
  timezone: s.timezone,
  fires: s.tool ?? `agent ${s.agent}`,
  paused: s.paused ? 'yes' : 'no',
  next: s.next_fire_at ?? '-',
  last: s.last_fire_at ?? '-',
});

export async function schedulesCreate(
  ctx: Context,
  name: string,
  f: ScheduleCreateFlags,
): Promise<number> {
  if ((f.tool === undefined) === (f.agent === undefined)) {
    throw usageError('give exactly one of --tool (with --args) or --agent (with --input)');
  }
  let input: unknown = f.input;
  if (f.input !== undefined && f.input.trimStart().startsWith('{'))
    input = jsonObject(f.input, '--input');
  const body = await ctx.api.request<ScheduleOut>({
    method: 'POST',
    path: base(ctx),
    json: {
      name,
      cron: f.cron,
      ...(f.timezone !== undefined ? { timezone: f.timezone } : {}),
      ...(f.tool !== undefined
        ? { tool: f.tool, arguments: f.args !== undefined ? jsonObject(f.args, '--args') : {} }
        : { agent: f.agent, input }),
      ...(f.channel !== undefined ? { channel: f.channel } : {}),
      ...(f.catchUp !== undefined ? { catch_up: f.catchUp } : {}),
      ...(f.paused ? { paused: true } : {}),
    },
  });
  if (ctx.settings.json) printJson(ctx.io, body);
  else
    printLine(ctx.io, `schedule ${body.name} created; next run ${body.next_fire_at ?? '(paused)'}`);
  return 0;
}

export async function schedulesList(ctx: Context): Promise<number> {
  const body = await ctx.api.request<{ schedules: ScheduleOut[] }>({
    path: `${base(ctx)}?limit=500`,
  });
  if (ctx.settings.json) printJson(ctx.io, body);
  else
    printTable(ctx.io, body.schedules.map(row), [
      'name',
      'cron',
      'timezone',
      'fires',
      'paused',
      'next',
      'last',
    ]);
  return 0;
}

export async function schedulesShow(ctx: Context, name: string): Promise<number> {
  const body = await ctx.api.request<ScheduleOut>({
    path: `${base(ctx)}/${encodeURIComponent(name)}`,
  });
  if (ctx.settings.json) {
    printJson(ctx.io, body);
    return 0;
  }
  const r = row(body);
  for (const [k, v] of Object.entries(r)) printLine(ctx.io, `${k.padEnd(9)} ${v}`);
  printLine(ctx.io, '');
  printTable(
    ctx.io,
    (body.firings ?? []).map((f) => ({
      tick: f.tick_at,
      started: f.tool_call_id ?? f.task_id ?? '-',
    })),
    ['tick', 'started'],
  );
  return 0;
}

export async function schedulesSet(
  ctx: Context,
  name: string,
  action: 'pause' | 'resume' | 'delete',
): Promise<number> {
  const path = `${base(ctx)}/${encodeURIComponent(name)}`;
  if (action === 'delete') {
    await ctx.api.request({ method: 'DELETE', path });
    if (ctx.settings.json) printJson(ctx.io, { deleted: name });
    else printLine(ctx.io, `schedule ${name} deleted`);
    return 0;
  }
  const body = await ctx.api.request<ScheduleOut>({ method: 'POST', path: `${path}/${action}` });
  if (ctx.settings.json) printJson(ctx.io, body);
  else
    printLine(
      ctx.io,
      action === 'pause'
        ? `schedule ${name} paused`
        : `schedule ${name} resumed; next run ${body.next_fire_at ?? '-'}`,
    );
  return 0;
}
