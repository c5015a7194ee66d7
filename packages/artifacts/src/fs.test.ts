import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, relative, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { artifactStoreContract, codeOf, collect } from './contract.ts';
import { createArtifactStore } from './create.ts';
import { ArtifactStoreConfig } from './store.ts';
import type { ArtifactStore } from './store.ts';

/** Every file under `dir` (dot files included, folders not), as sorted `a/b` paths. */
async function filesUnder(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true }).catch(
    (err: unknown) => {
      if ((err as { code?: unknown }).code === 'ENOENT') return [];
      throw err;
    },
  );
  return entries
    .filter((e) => !e.isDirectory())
    .map((e) => relative(dir, join(e.parentPath, e.name)).split(sep).join('/'))
    .sort();
}

artifactStoreContract('fs', async () => {
  const root = await mkdtemp(join(tmpdir(), 'artifacts-'));
  return {
    store: createArtifactStore({ kind: 'fs', root }),
    uriOf: (key) => pathToFileURL(join(root, ...key.split('/'))).href,
    contentTypeOf: () => undefined,
    rawNames: () => filesUnder(root),
    async plantForeign(name, data) {
      await mkdir(dirname(join(root, name)), { recursive: true });
      await writeFile(join(root, name), data);
    },
    close: () => rm(root, { recursive: true, force: true }),
  };
});

describe('fs artifact store', () => {
  let root: string;
  let store: ArtifactStore;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), 'artifacts-'));
    store = createArtifactStore({ kind: 'fs', root });
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it('has no signed URLs', async () => {
    await store.put('a/b/hello.txt', Buffer.from('hello'));
    expect(await store.signedUrl('a/b/hello.txt', 60)).toBeUndefined();
  });

  it('creates no folder for a refused put', async () => {
    expect(await codeOf(store.put('y/z.bin', new Uint8Array(11), { maxBytes: 10 }))).toBe(
      'too_large',
    );
    expect(await codeOf(store.put('a//b', Buffer.from('x')))).toBe('invalid_key');
    expect(await readdir(root)).toEqual([]);
  });

  it('never follows a symlink planted under the root', async () => {
    await writeFile(join(root, 'outside'), 'secret');
    await symlink(join(root, 'outside'), join(root, 'link'));
    expect(await codeOf(store.get('link'))).toBe('not_found');
    expect(await store.stat('link')).toBeUndefined();
    expect((await collect(store.list(''))).map((o) => o.key)).toEqual(['outside']);
  });
});

describe('artifact store config', () => {
  it('parses the fs adapter and rejects unknown kinds and keys', () => {
    expect(ArtifactStoreConfig.parse({ kind: 'fs', root: '/data' })).toEqual({
      kind: 'fs',
      root: '/data',
    });
    expect(ArtifactStoreConfig.safeParse({ kind: 's3', bucket: 'b' }).success).toBe(false);
    expect(ArtifactStoreConfig.safeParse({ kind: 'fs', root: '/d', extra: 1 }).success).toBe(false);
  });
});
