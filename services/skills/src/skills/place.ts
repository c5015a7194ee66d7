// Puts a skill's files into a sandbox at `skills/<name>/`, from the version's zip in the
// artifact store, and makes its dependency environment usable there (envs.ts). A marker file records the version placed, so a session that already holds it
// is not written again. The zip is read in memory (bounded by the zip limits) and written
// through the sandbox's own file API: nothing of a project's skill ever lands in a folder of
// the host that another sandbox could read (it used to be extracted under the host's /tmp).
import { skillZipKey } from '@toolmesh/artifacts';
import { ToolError } from '@toolmesh/protocol';
import type { Sandbox } from '@toolmesh/sandbox';
import { readSkillFiles, skillLocation, type SkillFileData } from '@toolmesh/skills';
import type { SkillsStore } from '@toolmesh/store';
import type { SkillsDeps } from './deps.ts';
import { ensureSkillEnv, type EnvView } from './envs.ts';

const MARKER = '.toolmesh-version';

export interface PlacedSkill {
  name: string;
  version: string;
  /** Workdir-relative folder holding the skill's files. */
  path: string;
  files: string[];
  /** The text of SKILL.md. */
  skillMd: string;
  /** The skill's dependency environment, mounted; undefined when it has no dependencies. */
  env: EnvView | undefined;
}

/** The call a placement runs for: a dependency build waits no longer than it may. */
export interface PlaceCall {
  signal: AbortSignal;
  deadline: number;
}

export const skillPath = skillLocation;

async function readStream(s: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const c of s) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
  return Buffer.concat(chunks);
}

/** Resolves the version to use: the one asked for, else the active one. Refuses disabled skills. */
export async function resolveSkill(
  deps: SkillsDeps<SkillsStore>,
  project: string,
  name: string,
  version?: string,
) {
  const skill = await deps.store.skills.get(project, name);
  if (!skill)
    throw new ToolError(`no skill named ${JSON.stringify(name)} in this project`, {
      details: { skill: name },
    });
  if (!skill.enabled)
    throw new ToolError(`skill ${name} is disabled`, { details: { skill: name } });
  const v = version ?? skill.active_version;
  if (!v) throw new ToolError(`skill ${name} has no active version`, { details: { skill: name } });
  const versions = await deps.store.skills.versions(skill.skill_id);
  if (!versions.some((x) => x.version === v)) {
    throw new ToolError(`skill ${name} has no version ${v}`, {
      details: { skill: name, version: v },
    });
  }
  return { skill, version: v };
}

/** The skill's zip, read from the artifact store. */
export async function skillZip(
  deps: SkillsDeps<SkillsStore>,
  project: string,
  name: string,
  version: string,
): Promise<Buffer> {
  return readStream(await deps.artifacts.get(skillZipKey(project, name, version)));
}

/** Reads a skill zip (with every package check) into memory for `fn`. */
export async function withSkillFiles<T>(
  deps: SkillsDeps<SkillsStore>,
  zip: Buffer,
  fn: (files: readonly SkillFileData[], skillMd: string) => Promise<T>,
): Promise<T> {
  const { files } = await readSkillFiles(zip, deps.limits.zip);
  const skillMd = files.find((f) => f.path === 'SKILL.md')?.data.toString('utf8') ?? '';
  return fn(files, skillMd);
}

export async function placeSkill(
  deps: SkillsDeps<SkillsStore>,
  sandbox: Sandbox,
  project: string,
  name: string,
  version: string | undefined,
  call: PlaceCall,
): Promise<PlacedSkill> {
  const resolved = await resolveSkill(deps, project, name, version);
  const path = skillPath(name);
  const zip = await skillZip(deps, project, name, resolved.version);
  const placed = await sandbox.getFile(`${path}/${MARKER}`).then(
    (b) => b.toString('utf8').trim(),
    () => undefined,
  );
  // Checked in memory, then copied in through the sandbox's own file API, so the same code
  // serves any provider.
  return withSkillFiles(deps, zip, async (files, skillMd) => {
    if (placed !== resolved.version) {
      for (const f of files) await sandbox.putFile(`${path}/${f.path}`, f.data);
      await sandbox.putFile(`${path}/${MARKER}`, `${resolved.version}\n`);
    }
    const env = await ensureSkillEnv(deps, sandbox, {
      project,
      skill: name,
      version: resolved.version,
      files,
      signal: call.signal,
      deadline: call.deadline,
    });
    return { name, version: resolved.version, path, files: files.map((f) => f.path), skillMd, env };
  });
}
