// What run_cmd and run_cmd_async (and run_service) do alike before a command starts: place the
// skill, settle the working folder, copy the inputs in, and build the sandbox's options.
import type { Sandbox, SpawnOptions } from '@toolmesh/sandbox';
import type { SkillsStore } from '@toolmesh/store';
import type { SkillsDeps } from './deps.ts';
import { copyInputs } from './files.ts';
import { placeSkill, skillPath, type PlaceCall, type PlacedSkill } from './place.ts';

export interface CommandArgs {
  skill?: string | undefined;
  workdir?: string | undefined;
  env?: Record<string, string> | undefined;
  inputs?: readonly { artifact_id: string; path: string }[] | undefined;
}

export interface Prepared {
  placed: PlacedSkill | undefined;
  /** Workdir-relative folder the command runs in ('' for the workdir itself). */
  base: string;
  /** Sandbox options every command gets: env, cwd and the output tails. */
  options: SpawnOptions;
}

export async function prepareCommand(
  deps: SkillsDeps<SkillsStore>,
  sandbox: Sandbox,
  project: string,
  args: CommandArgs,
  call: PlaceCall,
): Promise<Prepared> {
  const placed = args.skill
    ? await placeSkill(deps, sandbox, project, args.skill, undefined, call)
    : undefined;
  const base = args.workdir ?? (placed ? skillPath(placed.name) : '');
  await copyInputs(deps, sandbox, project, args.inputs ?? [], base);
  return {
    placed,
    base,
    options: {
      // The skill environment's variables first: a caller may still set its own.
      env: { ...placed?.env?.vars, ...args.env },
      ...(base ? { cwd: base } : {}),
      limits: {
        stdoutBytes: deps.limits.stdoutTailBytes,
        stderrBytes: deps.limits.stderrTailBytes,
      },
    },
  };
}
