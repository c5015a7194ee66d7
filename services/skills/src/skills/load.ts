// skills.load and skills.activate. `load` reads a skill (SKILL.md, its file list, where it is
// placed, its dependencies and their environment's state) so a model can learn how to use it;
// with a session_id it also places the skill in that session's sandbox, as `activate` does
// (files at skills/<name>/, dependency environment built or waited for, and mounted).
import { ActivateArgs, dependencyKinds, LoadArgs } from '@toolmesh/skills';
import { defineTool, type ToolContext } from '@toolmesh/tool-service';
import type { SkillsDeps } from './deps.ts';
import { dependenciesOf, envStatusOf, type EnvView } from './envs.ts';
import { placeSkill, resolveSkill, skillPath, skillZip, withSkillFiles } from './place.ts';
import { sandboxFor } from './sessions.ts';

/** Placing may wait for a dependency build: as long as a build may take, and a minute more. */
const placeTimeoutMs = (deps: SkillsDeps) => deps.envs.buildTimeoutMs + 60_000;

const envOut = (env: EnvView | undefined) =>
  env ? { status: env.status, kinds: env.kinds, location: env.location, builds: env.builds } : null;

async function place(
  deps: SkillsDeps,
  ctx: ToolContext,
  skill: string,
  version: string | undefined,
  sessionId: string | undefined,
) {
  const lease = await sandboxFor(deps, ctx, sessionId);
  try {
    return await placeSkill(deps, lease.sandbox, ctx.project, skill, version, ctx);
  } finally {
    await lease.release();
  }
}

export function loadTool(deps: SkillsDeps) {
  return defineTool({
    name: 'load',
    description: "Reads a skill's SKILL.md and lists its files; places it when given a session.",
    args: LoadArgs,
    timeoutMs: placeTimeoutMs(deps),
    handler: async (args, ctx) => {
      const { skill, version } = await resolveSkill(deps, ctx.project, args.skill, args.version);
      const zip = await skillZip(deps, ctx.project, skill.name, version);
      const read = await withSkillFiles(deps, zip, (files, skillMd) => {
        const kinds = dependencyKinds(
          dependenciesOf({ skill: skill.name, version, files }, deps.envs),
        );
        return Promise.resolve({ files: files.map((f) => f.path), skillMd, kinds });
      });
      const base = {
        name: skill.name,
        description: skill.description,
        version,
        location: skillPath(skill.name),
        files: read.files,
        skill_md: read.skillMd,
      };
      if (args.session_id === undefined) {
        const row =
          read.kinds.length === 0
            ? undefined
            : await deps.store.skillEnvs.get({
                projectId: ctx.project,
                skillName: skill.name,
                version,
                provider: deps.sandboxes.kind,
              });
        return { ...base, placed: false, environment: envStatusOf(row, read.kinds) };
      }
      const placed = await place(deps, ctx, skill.name, version, args.session_id);
      return {
        ...base,
        placed: true,
        session_id: args.session_id,
        environment: envOut(placed.env),
      };
    },
  });
}

export function activateTool(deps: SkillsDeps) {
  return defineTool({
    name: 'activate',
    description: "Puts a skill's files into a session's sandbox at skills/<name>/.",
    args: ActivateArgs,
    timeoutMs: placeTimeoutMs(deps),
    handler: async (args, ctx) => {
      const placed = await place(deps, ctx, args.skill, args.version, args.session_id);
      return {
        name: placed.name,
        version: placed.version,
        location: placed.path,
        files: placed.files,
        skill_md: placed.skillMd,
        environment: envOut(placed.env),
      };
    },
  });
}
