// `toolmesh skills upload <dir|zip>`: a folder is zipped the way a skill must be packed (one
// root folder named after the skill), a .zip is sent as it is; the api checks and stores it.
// Entries carry the files' own times, not now: an unchanged folder makes the same zip, hence the
// same version (its sha256), so uploading it again is recognised as a re-upload.
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, join, relative, resolve } from 'node:path';
import yazl from 'yazl';
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

export async function skillsUploadCommand(
  ctx: Context,
  path: string,
  flags: { activate: boolean },
): Promise<number> {
  const project = projectOf(ctx.settings);
  const info = await stat(path).catch(() => {
    throw new CliError(ExitCode.notFound, 'not_found', `no such file or folder: ${path}`);
  });
  const data = info.isDirectory() ? await zipFolder(path) : await readFile(path);
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
