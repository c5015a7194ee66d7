// Zips a folder as a skill upload does: one root folder named after the skill.
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, join, relative } from 'node:path';
import yazl from 'yazl';

export async function zipFolder(dir: string): Promise<Buffer> {
  const root = basename(dir);
  const z = new yazl.ZipFile();
  const walk = async (d: string): Promise<void> => {
    for (const name of (await readdir(d)).sort()) {
      const p = join(d, name);
      if ((await stat(p)).isDirectory()) await walk(p);
      else z.addBuffer(await readFile(p), `${root}/${relative(dir, p)}`);
    }
  };
  await walk(dir);
  z.end();
  const chunks: Buffer[] = [];
  for await (const c of z.outputStream) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}
