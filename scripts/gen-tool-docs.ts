// `pnpm docs:tools`: writes docs/tools.md, the reserved tools' reference, from the catalog.
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { format } from 'prettier';
import { TOOL_CATALOG, renderToolReference } from '@toolmesh/skills';

const file = join(import.meta.dirname, '..', 'docs/tools.md');
const page = await format(renderToolReference(TOOL_CATALOG), {
  parser: 'markdown',
  filepath: file,
});
await writeFile(file, page);
process.stdout.write(`written ${file}\n`);
