// The management commands over the api: tools, executions, tasks and sandboxes of a project.
// Each prints the api's JSON with --json, or a short table.
import type { Context } from '../context.ts';
import { CliError, ExitCode } from '../exit.ts';
import { printJson, printLine, printTable } from '../output.ts';
import { projectOf } from '../settings.ts';
import { intOption, jsonObject } from './parse.ts';

type Row = Record<string, unknown>;
const p = (ctx: Context) => `/v1/projects/${encodeURIComponent(projectOf(ctx.settings))}`;

function show(ctx: Context, body: unknown, rows: Row[], columns: string[]): number {
  if (ctx.settings.json) printJson(ctx.io, body);
  else printTable(ctx.io, rows, columns);
  return ExitCode.ok;
}

export async function toolsList(
  ctx: Context,
  f: {
    category?: string;
    tag?: string[];
    includeDeprecated?: boolean;
    query?: string;
    origin?: string;
    limit?: string;
  },
): Promise<number> {
  const body = await ctx.api.request<{ tools: Row[] }>({
    path: `${p(ctx)}/tools`,
    query: {
      category: f.category,
      tag: f.tag,
      include_deprecated: f.includeDeprecated ? 'true' : undefined,
      q: f.query,
      origin: f.origin,
      limit: intOption(f.limit, '--limit'),
    },
  });
  return show(ctx, body, body.tools, ['name', 'category', 'origin', 'description']);
}

export async function executionsList(
  ctx: Context,
  f: {
    tool?: string;
    status?: string;
    channel?: string;
    session?: string;
    limit?: string;
    cursor?: string;
  },
): Promise<number> {
  const body = await ctx.api.request<{
    executions: Row[];
    total: number;
    next_cursor: string | null;
  }>({
    path: `${p(ctx)}/executions`,
    query: {
      tool: f.tool,
      status: f.status,
      channel: f.channel,
      session_id: f.session,
      cursor: f.cursor,
      limit: intOption(f.limit, '--limit'),
    },
  });
  show(ctx, body, body.executions, [
    'id',
    'tool',
    'status',
    'error_code',
    'duration_ms',
    'started_at',
  ]);
  if (!ctx.settings.json) {
    ctx.io.stderr.write(
      `${body.total} in all${body.next_cursor ? `; next page: --cursor ${body.next_cursor}` : ''}\n`,
    );
  }
  return ExitCode.ok;
}

interface ExecutionDetail {
  execution: Row & { status: string };
  card: { content: Row } | null;
}

export async function executionsShow(ctx: Context, id: string): Promise<number> {
  const body = await ctx.api.request<ExecutionDetail>({
    path: `${p(ctx)}/executions/${encodeURIComponent(id)}`,
  });
  if (ctx.settings.json) printJson(ctx.io, body);
  else {
    printTable(
      ctx.io,
      [body.execution],
      ['id', 'tool', 'status', 'error_code', 'duration_ms', 'card_id'],
    );
    if (body.card) printLine(ctx.io, JSON.stringify(body.card.content, null, 2));
  }
  return ExitCode.ok;
}

export async function executionsCancel(
  ctx: Context,
  id: string,
  f: { reason?: string },
): Promise<number> {
  const body = await ctx.api.request<ExecutionDetail>({
    method: 'POST',
    path: `${p(ctx)}/executions/${encodeURIComponent(id)}/cancel`,
    json: f.reason ? { reason: f.reason } : {},
  });
  if (ctx.settings.json) printJson(ctx.io, body);
  else printLine(ctx.io, `cancel sent to ${id} (${body.execution.status})`);
  return ExitCode.ok;
}

export async function taskStart(
  ctx: Context,
  agent: string,
  f: { input: string; channel?: string; wait?: boolean; timeoutMs?: string },
): Promise<number> {
  // A JSON object is structured input; anything else is the prompt text itself.
  const input = f.input.trimStart().startsWith('{') ? jsonObject(f.input, '--input') : f.input;
  const waitMs = intOption(f.timeoutMs, '--timeout-ms') ?? 300_000;
  const body = await ctx.api.request<{ task_id: string; status: string; woken: boolean }>({
    method: 'POST',
    path: `${p(ctx)}/agents/${encodeURIComponent(agent)}/tasks`,
    json: { input, ...(f.channel ? { channel: f.channel } : {}) },
  });
  if (!body.woken) ctx.io.stderr.write('the agent was not woken: the task waits in its inbox\n');
  if (!f.wait) {
    if (ctx.settings.json) printJson(ctx.io, body);
    else printLine(ctx.io, body.task_id);
    return ExitCode.ok;
  }
  // Until the task ends: its status and final card, as `task show` prints them.
  const deadline = Date.now() + waitMs;
  for (;;) {
    const task = await ctx.api.request<TaskRow>({
      path: `${p(ctx)}/tasks/${encodeURIComponent(body.task_id)}`,
    });
    if (task.status === 'succeeded' || task.status === 'failed' || task.status === 'canceled') {
      printTask(ctx, task);
      return task.status === 'succeeded' ? ExitCode.ok : ExitCode.failed;
    }
    if (Date.now() >= deadline) {
      throw new CliError(
        ExitCode.timeout,
        'timeout',
        `task ${body.task_id} is still ${task.status} after ${waitMs} ms`,
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

type TaskRow = Row & { status: string; final_card: { content: unknown } | null };

function printTask(ctx: Context, body: TaskRow): void {
  if (ctx.settings.json) printJson(ctx.io, body);
  else {
    printTable(ctx.io, [body], ['task_id', 'agent_id', 'status', 'updated_at']);
    if (body.final_card) printLine(ctx.io, JSON.stringify(body.final_card.content, null, 2));
  }
}

export async function taskShow(ctx: Context, id: string): Promise<number> {
  const body = await ctx.api.request<TaskRow>({
    path: `${p(ctx)}/tasks/${encodeURIComponent(id)}`,
  });
  printTask(ctx, body);
  return ExitCode.ok;
}

export async function taskCancel(
  ctx: Context,
  id: string,
  f: { reason?: string },
): Promise<number> {
  const body = await ctx.api.request<TaskRow & { canceled_calls: { tool_call_id: string }[] }>({
    method: 'POST',
    path: `${p(ctx)}/tasks/${encodeURIComponent(id)}/cancel`,
    json: f.reason ? { reason: f.reason } : {},
  });
  if (ctx.settings.json) printJson(ctx.io, body);
  else
    printLine(
      ctx.io,
      `task ${id} ${body.status}; ${body.canceled_calls.length} running tool call(s) sent a cancel`,
    );
  return ExitCode.ok;
}

export async function sandboxesList(ctx: Context, f: { state?: string }): Promise<number> {
  const body = await ctx.api.request<{ sandboxes: Row[] }>({
    path: `${p(ctx)}/sandboxes`,
    query: { state: f.state },
  });
  return show(ctx, body, body.sandboxes, [
    'sandbox_id',
    'provider',
    'agent_id',
    'state',
    'last_used_at',
  ]);
}
