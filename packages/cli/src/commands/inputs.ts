// `toolmesh inputs list|show|answer`: what the project's MCP servers asked during calls that no
// MCP client could answer (elicitation). The call waits until an answer is given here (accept
// with content matching the requested form, decline, cancel) or its deadline passes.
import type { Context } from '../context.ts';
import { ExitCode, usageError } from '../exit.ts';
import { printJson, printLine, printTable } from '../output.ts';
import { projectOf } from '../settings.ts';

const base = (ctx: Context) =>
  `/v1/projects/${encodeURIComponent(projectOf(ctx.settings))}/input-requests`;

interface InputRequestOut {
  input_request_id: string;
  tool_call_id: string;
  tool_name: string;
  server: string;
  message: string;
  requested_schema: Record<string, unknown>;
  status: string;
  action: string | null;
  content: Record<string, unknown> | null;
  expires_at: string;
  answered_by: string | null;
}

export interface InputsListFlags {
  status?: string;
  limit?: string;
}

export async function inputsList(ctx: Context, f: InputsListFlags): Promise<number> {
  const q = new URLSearchParams();
  if (f.status) q.set('status', f.status);
  if (f.limit) q.set('limit', f.limit);
  const qs = q.size > 0 ? `?${q.toString()}` : '';
  const body = await ctx.api.request<{ input_requests: InputRequestOut[] }>({
    path: `${base(ctx)}${qs}`,
  });
  if (ctx.settings.json) printJson(ctx.io, body);
  else
    printTable(
      ctx.io,
      body.input_requests.map((r) => ({ ...r })),
      ['input_request_id', 'tool_name', 'tool_call_id', 'status', 'expires_at', 'message'],
    );
  return ExitCode.ok;
}

export async function inputsShow(ctx: Context, id: string): Promise<number> {
  const r = await ctx.api.request<InputRequestOut>({
    path: `${base(ctx)}/${encodeURIComponent(id)}`,
  });
  if (ctx.settings.json) printJson(ctx.io, r);
  else {
    printLine(ctx.io, `${r.input_request_id} (${r.status}) ${r.server} asks, for ${r.tool_name}:`);
    printLine(ctx.io, `  ${r.message}`);
    printLine(ctx.io, `  form: ${JSON.stringify(r.requested_schema)}`);
    printLine(ctx.io, `  expires ${r.expires_at}`);
    if (r.action) printLine(ctx.io, `  answered ${r.action} by ${r.answered_by ?? '?'}`);
  }
  return ExitCode.ok;
}

export interface AnswerFlags {
  action: string;
  content?: string;
}

export async function inputsAnswer(ctx: Context, id: string, f: AnswerFlags): Promise<number> {
  if (!['accept', 'decline', 'cancel'].includes(f.action)) {
    throw usageError('--action is accept, decline or cancel');
  }
  let content: unknown;
  if (f.content !== undefined) {
    try {
      content = JSON.parse(f.content);
    } catch {
      throw usageError('--content is a JSON object');
    }
  }
  if (f.action === 'accept' && content === undefined) {
    throw usageError('accept needs --content <json object> matching the requested form');
  }
  const r = await ctx.api.request<InputRequestOut>({
    method: 'POST',
    path: `${base(ctx)}/${encodeURIComponent(id)}/answer`,
    json: { action: f.action, ...(content !== undefined ? { content } : {}) },
  });
  if (ctx.settings.json) printJson(ctx.io, r);
  else
    printLine(
      ctx.io,
      `input request ${r.input_request_id}: ${r.action ?? '?'} by ${r.answered_by ?? '?'}; ${r.server} gets the answer and ${r.tool_name} goes on`,
    );
  return ExitCode.ok;
}
