// `toolmesh approvals list|approve|deny`: the project's tool calls waiting for a person, and
// their decisions. An approved call runs once; a denied one fails approval_denied with the
// reason given here (required for deny).
import type { Context } from '../context.ts';
import { ExitCode, usageError } from '../exit.ts';
import { printJson, printLine, printTable } from '../output.ts';
import { projectOf } from '../settings.ts';

const base = (ctx: Context) =>
  `/v1/projects/${encodeURIComponent(projectOf(ctx.settings))}/approvals`;

interface ApprovalOut {
  approval_id: string;
  tool_call_id: string;
  tool_name: string;
  status: string;
  arguments: unknown;
  expires_at: string;
  decided_by: string | null;
  reason: string | null;
}

export interface ApprovalsListFlags {
  status?: string;
  limit?: string;
}

export async function approvalsList(ctx: Context, f: ApprovalsListFlags): Promise<number> {
  const q = new URLSearchParams();
  if (f.status) q.set('status', f.status);
  if (f.limit) q.set('limit', f.limit);
  const qs = q.size > 0 ? `?${q.toString()}` : '';
  const body = await ctx.api.request<{ approvals: ApprovalOut[] }>({ path: `${base(ctx)}${qs}` });
  if (ctx.settings.json) printJson(ctx.io, body);
  else
    printTable(
      ctx.io,
      body.approvals.map((a) => ({ ...a, arguments: JSON.stringify(a.arguments) })),
      ['approval_id', 'tool_name', 'tool_call_id', 'status', 'expires_at', 'arguments'],
    );
  return ExitCode.ok;
}

export interface DecideFlags {
  reason?: string;
}

export async function approvalsDecide(
  ctx: Context,
  decision: 'approve' | 'deny',
  id: string,
  f: DecideFlags,
): Promise<number> {
  if (decision === 'deny' && !f.reason) throw usageError('deny needs --reason <text>');
  const a = await ctx.api.request<ApprovalOut>({
    method: 'POST',
    path: `${base(ctx)}/${encodeURIComponent(id)}/${decision}`,
    json: f.reason ? { reason: f.reason } : {},
  });
  if (ctx.settings.json) printJson(ctx.io, a);
  else
    printLine(
      ctx.io,
      decision === 'approve'
        ? `approval ${a.approval_id}: approved by ${a.decided_by ?? '?'}; ${a.tool_name} runs now`
        : `approval ${a.approval_id}: denied by ${a.decided_by ?? '?'}; ${a.tool_name} fails approval_denied`,
    );
  return ExitCode.ok;
}
