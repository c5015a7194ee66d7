// docs/tools.md is the reserved tools' reference, rendered from the catalog: this fails when a
// tool, a description or an argument changed and the page was not rendered again
// (`pnpm docs:tools`), so the page a user reads is the schema the service enforces.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { format } from 'prettier';
import { expect, it } from 'vitest';
import { TOOL_CATALOG, renderToolReference } from '@toolmesh/skills';

it('docs/tools.md is the catalog as it is (run `pnpm docs:tools` after changing a tool)', async () => {
  const file = join(import.meta.dirname, '..', 'docs/tools.md');
  const page = await readFile(file, 'utf8');
  const rendered = await format(renderToolReference(TOOL_CATALOG), {
    parser: 'markdown',
    filepath: file,
  });
  expect(page).toBe(rendered);
  // Every reserved tool and every one of its arguments is on the page.
  for (const t of TOOL_CATALOG) {
    expect(page).toContain(`## \`${t.name}\``);
    for (const arg of Object.keys((t.parameters as { properties?: object }).properties ?? {})) {
      expect(page, `${t.name}.${arg}`).toMatch(
        new RegExp(`## \`${t.name.replace('.', '\\.')}\`[\\s\\S]*?\\| \`${arg}\``),
      );
    }
  }
});
