// `toolmesh tools approve <name>`: approves the changed definition an MCP tool's server lists
// (held since the refresh that found it: calls fail definition_changed until then).
import type { Context } from '../context.ts';
import { ExitCode } from '../exit.ts';
import { printJson, printLine } from '../output.ts';
import { projectOf } from '../settings.ts';

export interface ApproveFlags {
  hash?: string;
}

interface ToolOut {
  name: string;
  description: string;
  pending_definition: unknown;
}

export async function toolsApprove(ctx: Context, name: string, f: ApproveFlags): Promise<number> {
  const tool = await ctx.api.request<ToolOut>({
    method: 'POST',
    path: `/v1/projects/${encodeURIComponent(projectOf(ctx.settings))}/tools/${encodeURIComponent(name)}/approve-definition`,
    json: f.hash ? { hash: f.hash } : {},
  });
  if (ctx.settings.json) printJson(ctx.io, tool);
  else printLine(ctx.io, `tool ${tool.name}: new definition approved; calls run again`);
  return ExitCode.ok;
}
