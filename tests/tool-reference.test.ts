// docs/tools.md is the reserved tools' reference, rendered from the catalog: this fails when a
// tool, a description, an argument, a result field or an error code changed and the page was not
// rendered again (`pnpm docs:tools`), so the page a user reads is the schema the service enforces.
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
  // Every reserved tool is on the page and its section names each of its arguments, each field
  // of its result and each error code it files.
  const sections = new Map(
    page
      .split(/^## /m)
      .slice(1)
      .map((text) => [/^`([^`]+)`/.exec(text)?.[1] ?? '', text]),
  );
  for (const t of TOOL_CATALOG) {
    const section = sections.get(t.name) ?? '';
    expect(section, t.name).not.toBe('');
    for (const arg of Object.keys((t.parameters as { properties?: object }).properties ?? {})) {
      expect(section, `${t.name} argument ${arg}`).toMatch(new RegExp(`^\\| \`${arg}\` `, 'm'));
    }
    for (const field of Object.keys((t.resultSchema as { properties?: object }).properties ?? {})) {
      expect(section, `${t.name} result ${field}`).toMatch(new RegExp(`^\\| \`${field}\` `, 'm'));
    }
    for (const e of t.errors) expect(section, `${t.name}`).toContain(`- \`${e.code}\`: ${e.when}`);
  }
});
