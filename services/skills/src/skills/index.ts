import { TOOL_CATALOG } from '@toolmesh/skills';
import type { ToolDefinition } from '@toolmesh/tool-service';
import type { SkillsDeps } from './deps.ts';
import { activateTool, loadTool } from './load.ts';
import { runCmdTool } from './run-cmd.ts';
import { taskTools } from './tasks.ts';
import { jobTools } from './jobs.ts';

export const SKILLS_TARGET = 'skills';

/** Whether each tool may run twice, as the catalog (and so the registry) says. */
const idempotent = new Map(
  TOOL_CATALOG.filter((t) => t.target === SKILLS_TARGET).map((t) => [t.tool, t.idempotent]),
);

/** The skills.* tools; run_service is among the task tools (it shares their registry). */
export function skillsTools(deps: SkillsDeps): ToolDefinition[] {
  const tools = [
    loadTool(deps),
    activateTool(deps),
    runCmdTool(deps),
    ...taskTools(deps),
    ...jobTools(deps),
  ] as ToolDefinition[];
  return tools.map((t) => ({ ...t, idempotent: idempotent.get(t.name) ?? true }));
}
export type { SkillsDeps, SkillsLimits, SkillsQuotas } from './deps.ts';
export type { SessionOptions } from './sessions.ts';
export type { EnvOptions } from './envs.ts';
