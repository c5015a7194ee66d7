// Reserved tools follow the release that serves them: a project seeded by an older release (its
// skills.* schema with a pattern RE2 cannot run, say) gets the current definitions; tools of
// other origins and names the release does not know are left alone.
import { beforeAll, expect, it } from 'vitest';
import type { Store } from '../store.ts';
import { useMigratedStore } from '../test-support.ts';
import type { NewTool } from './tools.ts';

const fixture = useMigratedStore(['old', 'other']);
let store: Store;
beforeAll(() => {
  store = fixture.store;
});

const schema = (pattern: string) => ({
  type: 'object',
  properties: { path: { type: 'string', pattern } },
});
const reserved = (pattern: string, description = 'Runs a command'): NewTool => ({
  name: 'skills.run_cmd',
  target: 'skills',
  description,
  category: 'skills',
  parameters: schema(pattern),
  origin: 'skills',
});

it('updates reserved tools that differ from the release, and only those', async () => {
  await store.tools.seed('old', [reserved('^(?!/).+$')]);
  await store.tools.seed('other', [reserved('^[a-z]+$')]);
  await store.tools.create('old', {
    name: 'mine.run_cmd',
    target: 'mine',
    description: 'a registry tool of the project',
    category: 'custom',
    parameters: schema('^(?!/).+$'),
    origin: 'http',
  });

  expect(await store.tools.syncReserved([reserved('^[a-z]+$')])).toBe(1);
  expect((await store.tools.get('old', 'skills.run_cmd'))?.parameters).toEqual(schema('^[a-z]+$'));
  expect((await store.tools.get('other', 'skills.run_cmd'))?.parameters).toEqual(
    schema('^[a-z]+$'),
  );
  // Not reserved: a project's own tool keeps what its owner registered.
  expect((await store.tools.get('old', 'mine.run_cmd'))?.parameters).toEqual(schema('^(?!/).+$'));
  // Nothing left to change.
  expect(await store.tools.syncReserved([reserved('^[a-z]+$')])).toBe(0);
  // A description change counts too.
  expect(await store.tools.syncReserved([reserved('^[a-z]+$', 'Runs one command')])).toBe(2);
});

it('adds a reserved tool a newer release brought to every project, once', async () => {
  const added: NewTool = {
    name: 'builtin.read_file',
    target: 'builtin',
    description: 'Reads a file',
    category: 'files',
    parameters: { type: 'object', properties: { path: { type: 'string' } } },
    origin: 'builtin',
  };
  const current = [reserved('^[a-z]+$', 'Runs one command'), added];
  expect(await store.tools.syncReserved(current)).toBe(2); // one per project
  for (const project of ['old', 'other']) {
    expect(await store.tools.get(project, 'builtin.read_file')).toMatchObject({
      target: 'builtin',
      category: 'files',
      origin: 'builtin',
      enabled: true,
    });
  }
  expect(await store.tools.syncReserved(current)).toBe(0);
});
