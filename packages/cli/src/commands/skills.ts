// `toolmesh skills upload <dir|zip>`: a folder is zipped the way a skill must be packed (one
// root folder named after the skill), a .zip is sent as it is; the api checks and stores it.
// `toolmesh skills validate <dir|zip>` runs the api's own check of the package (the zip, its
// layout, SKILL.md's front matter in the Agent Skills format) on the same zip, without uploading.
// Entries carry the files' own times, not now: an unchanged folder makes the same zip, hence the
// same version (its sha256), so uploading it again is recognised as a re-upload.
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, join, relative, resolve } from 'node:path';
import yazl from 'yazl';
import { inspectSkillZip, skillPackageErrorCodeOf } from '@toolmesh/skills';
import type { Context } from '../context.ts';
import { CliError, ExitCode } from '../exit.ts';
import { printJson, printLine } from '../output.ts';
import { projectOf } from '../settings.ts';

export async function zipFolder(dir: string): Promise<Buffer> {
  const root = basename(resolve(dir));
  const zip = new yazl.ZipFile();
  const walk = async (d: string): Promise<void> => {
    for (const name of (await readdir(d)).sort()) {
      const p = join(d, name);
      const s = await stat(p);
      if (s.isDirectory()) await walk(p);
      else
        zip.addBuffer(await readFile(p), `${root}/${relative(dir, p)}`, {
          mode: s.mode,
          mtime: s.mtime,
        });
    }
  };
  await walk(dir);
  zip.end();
  const chunks: Buffer[] = [];
  for await (const c of zip.outputStream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

interface Uploaded {
  skill: { name: string; active_version?: string | null };
  version: { version: string };
  created: boolean;
}

async function readSkill(path: string): Promise<Buffer> {
  const info = await stat(path).catch(() => {
    throw new CliError(ExitCode.notFound, 'not_found', `no such file or folder: ${path}`);
  });
  return info.isDirectory() ? zipFolder(path) : readFile(path);
}

export async function skillsValidateCommand(ctx: Context, path: string): Promise<number> {
  const data = await readSkill(path);
  let pkg;
  try {
    pkg = await inspectSkillZip(data);
  } catch (err) {
    const code = skillPackageErrorCodeOf(err);
    if (code === undefined) throw err;
    throw new CliError(ExitCode.usage, code, (err as Error).message);
  }
  if (ctx.settings.json) {
    printJson(ctx.io, {
      valid: true,
      name: pkg.name,
      description: pkg.description,
      version: pkg.sha256,
      files: pkg.files.length,
      unknown_fields: pkg.unknownFields,
    });
  } else {
    printLine(ctx.io, `${pkg.name}: valid (${pkg.files.length} files, version ${pkg.sha256})`);
    if (pkg.unknownFields.length > 0) {
      printLine(
        ctx.io,
        `note: ${pkg.unknownFields.join(', ')} ${pkg.unknownFields.length === 1 ? 'is' : 'are'} not Agent Skills front matter fields; kept as written`,
      );
    }
  }
  return ExitCode.ok;
}

export async function skillsUploadCommand(
  ctx: Context,
  path: string,
  flags: { activate: boolean },
): Promise<number> {
  const project = projectOf(ctx.settings);
  const data = await readSkill(path);
  const form = new FormData();
  form.set('activate', String(flags.activate));
  form.set('file', new Blob([new Uint8Array(data)], { type: 'application/zip' }), 'skill.zip');
  const res = await ctx.api.request<Uploaded>({
    method: 'POST',
    path: `/v1/projects/${encodeURIComponent(project)}/skills`,
    form,
    timeoutMs: 120_000,
  });
  if (ctx.settings.json) printJson(ctx.io, res);
  else
    printLine(
      ctx.io,
      `${res.skill.name} ${res.version.version}${res.created ? '' : ' (already uploaded)'}`,
    );
  return ExitCode.ok;
}
