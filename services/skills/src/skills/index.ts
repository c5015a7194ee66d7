import type { ToolDefinition } from '@toolmesh/tool-service';
import type { SkillsDeps } from './deps.ts';
import { activateTool, loadTool } from './load.ts';
import { runCmdTool } from './run-cmd.ts';
import { taskTools } from './tasks.ts';
import { jobTools } from './jobs.ts';

export const SKILLS_TARGET = 'skills';

/** The skills.* tools; run_service is among the task tools (it shares their registry). */
export function skillsTools(deps: SkillsDeps): ToolDefinition[] {
  return [
    loadTool(deps),
    activateTool(deps),
    runCmdTool(deps),
    ...taskTools(deps),
    ...jobTools(deps),
  ] as ToolDefinition[];
}
export type { SkillsDeps, SkillsLimits, SkillsQuotas } from './deps.ts';
export type { SessionOptions } from './sessions.ts';
export type { EnvOptions } from './envs.ts';
