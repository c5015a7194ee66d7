// skills.load and skills.activate. `load` reads a skill (SKILL.md and its file list) without
// touching a sandbox, so a model can learn how to use it; `activate` also puts its files into a
// session's sandbox at skills/<name>/, ready for run_cmd.
import { ActivateArgs, LoadArgs } from '@toolmesh/skills';
import { defineTool } from '@toolmesh/tool-service';
import type { SkillsDeps } from './deps.ts';
import { placeSkill, resolveSkill, skillPath, skillZip, withSkillFiles } from './place.ts';
import { sandboxFor } from './sessions.ts';

export function loadTool(deps: SkillsDeps) {
  return defineTool({
    name: 'load',
    description: "Reads a skill's SKILL.md and lists its files.",
    args: LoadArgs,
    timeoutMs: 60_000,
    handler: async (args, ctx) => {
      const { skill, version } = await resolveSkill(deps, ctx.project, args.skill, args.version);
      const zip = await skillZip(deps, ctx.project, skill.name, version);
      return withSkillFiles(deps, zip, (files, skillMd) =>
        Promise.resolve({
          name: skill.name,
          description: skill.description,
          version,
          location: skillPath(skill.name),
          files: files.map((f) => f.path),
          skill_md: skillMd,
        }),
      );
    },
  });
}

export function activateTool(deps: SkillsDeps) {
  return defineTool({
    name: 'activate',
    description: "Puts a skill's files into a session's sandbox at skills/<name>/.",
    args: ActivateArgs,
    timeoutMs: 120_000,
    handler: async (args, ctx) => {
      const lease = await sandboxFor(deps, ctx, args.session_id);
      try {
        const placed = await placeSkill(deps, lease.sandbox, ctx.project, args.skill, args.version);
        return {
          name: placed.name,
          version: placed.version,
          location: placed.path,
          files: placed.files,
          skill_md: placed.skillMd,
        };
      } finally {
        await lease.release();
      }
    },
  });
}
