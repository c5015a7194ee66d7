// Skill uploads over HTTP: a valid zip becomes a version (its sha256) stored in the artifact
// store; every package check refuses with its own code; versions can be re-activated; skills
// can be disabled and deleted; another project's key sees nothing.
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import yazl from 'yazl';
import { skillZipKey } from '@toolmesh/artifacts';
import { startTestApi, type TestApi } from '../test/support.ts';

let api: TestApi;
let project: { id: string; key: string };
beforeAll(async () => {
  api = await startTestApi({
    CG__SKILLS__MAX_ENTRIES: '50',
    CG__SKILLS__MAX_ZIP_BYTES: '200000',
    CG__SKILLS__MAX_UNCOMPRESSED_BYTES: '1000000',
  });
  project = await api.createProject();
});
afterAll(async () => {
  await api?.close();
});

type Entry = { path: string; data?: string; mode?: number };

function zip(entries: Entry[]): Promise<Buffer> {
  const z = new yazl.ZipFile();
  for (const e of entries) {
    if (e.path.endsWith('/')) z.addEmptyDirectory(e.path);
    else
      z.addBuffer(Buffer.from(e.data ?? ''), e.path, e.mode === undefined ? {} : { mode: e.mode });
  }
  z.end();
  const chunks: Buffer[] = [];
  return new Promise((resolve, reject) => {
    z.outputStream.on('data', (c: Buffer) => chunks.push(c));
    z.outputStream.on('end', () => resolve(Buffer.concat(chunks)));
    z.outputStream.on('error', reject);
  });
}

/** yazl refuses unsafe names, as it should; a crafted zip swaps one in byte for byte (the
 *  local header and the central directory both carry the name, same length). */
async function zipWithRenamed(entries: Entry[], from: string, to: string): Promise<Buffer> {
  const data = await zip(entries);
  const a = Buffer.from(from);
  const b = Buffer.from(to);
  let at = data.indexOf(a);
  while (at >= 0) {
    b.copy(data, at);
    at = data.indexOf(a, at + 1);
  }
  return data;
}

const skillMd = (name: string, description = 'Draws a picture.') =>
  `---\nname: ${name}\ndescription: ${description}\nlicense: MIT\n---\n# ${name}\n\nRun draw.py.\n`;

async function upload(
  data: Buffer,
  opts: { key?: string; project?: string; activate?: string; field?: string } = {},
) {
  const boundary = '----toolmesh-test-boundary';
  const parts: Buffer[] = [];
  if (opts.activate !== undefined) {
    parts.push(
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="activate"\r\n\r\n${opts.activate}\r\n`,
      ),
    );
  }
  parts.push(
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="${opts.field ?? 'file'}"; filename="skill.zip"\r\nContent-Type: application/zip\r\n\r\n`,
    ),
    data,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  );
  return api.request('POST', `/v1/projects/${opts.project ?? project.id}/skills`, {
    key: opts.key ?? project.key,
    payload: Buffer.concat(parts),
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  });
}

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe('upload', () => {
  it('stores a valid skill zip as a version named by its sha256, and activates it', async () => {
    const data = await zip([
      { path: 'painter/SKILL.md', data: skillMd('painter') },
      { path: 'painter/draw.py', data: 'print("hi")\n' },
    ]);
    const res = await upload(data);
    expect(res.status).toBe(201);
    expect(res.body.created).toBe(true);
    expect(res.body.version.version).toBe(sha(data));
    expect(res.body.version.front_matter).toMatchObject({ name: 'painter', license: 'MIT' });
    expect(res.body.skill).toMatchObject({
      name: 'painter',
      description: 'Draws a picture.',
      active_version: sha(data),
      enabled: true,
      versions: 1,
    });
    const stored = await api.artifacts.stat(skillZipKey(project.id, 'painter', sha(data)));
    expect(stored?.size).toBe(data.length);
    const again = await upload(data);
    expect(again.status).toBe(201);
    expect(again.body.created).toBe(false);
    expect(again.body.skill.versions).toBe(1);
  });

  it('keeps older versions and re-activates any of them', async () => {
    const v1 = await zip([{ path: 'notes/SKILL.md', data: skillMd('notes', 'First.') }]);
    const v2 = await zip([{ path: 'notes/SKILL.md', data: skillMd('notes', 'Second.') }]);
    await upload(v1);
    const second = await upload(v2, { activate: 'false' });
    expect(second.body.skill.active_version).toBe(sha(v1));
    const activated = await api.request(
      'POST',
      `/v1/projects/${project.id}/skills/notes/activate`,
      {
        key: project.key,
        body: { version: sha(v2) },
      },
    );
    expect(activated.status).toBe(200);
    expect(activated.body).toMatchObject({
      active_version: sha(v2),
      description: 'Second.',
      versions: 2,
    });
    const got = await api.request('GET', `/v1/projects/${project.id}/skills/notes`, {
      key: project.key,
    });
    expect(got.body.version_list.map((v: { version: string }) => v.version).sort()).toEqual(
      [sha(v1), sha(v2)].sort(),
    );
    const missing = await api.request('POST', `/v1/projects/${project.id}/skills/notes/activate`, {
      key: project.key,
      body: { version: 'a'.repeat(64) },
    });
    expect(missing.status).toBe(404);
  });

  const refusals: [string, () => Promise<Buffer>, number, string][] = [
    ['not a zip', () => Promise.resolve(Buffer.from('plain text, not a zip')), 400, 'not_a_zip'],
    [
      'path traversal',
      () =>
        zipWithRenamed(
          [
            { path: 'evil/SKILL.md', data: skillMd('evil') },
            { path: 'evil/xx/yy/etc/passwd', data: 'x' },
          ],
          'evil/xx/yy/',
          'evil/../../',
        ),
      400,
      'unsafe_path',
    ],
    [
      'absolute path',
      () =>
        zipWithRenamed(
          [
            { path: 'abs/SKILL.md', data: skillMd('abs') },
            { path: 'xabs/x', data: 'x' },
          ],
          'xabs/x',
          '/abs/x',
        ),
      400,
      'unsafe_path',
    ],
    [
      'a symlink',
      () =>
        zip([
          { path: 'link/SKILL.md', data: skillMd('link') },
          { path: 'link/l', data: '/etc/passwd', mode: 0o120777 },
        ]),
      400,
      'symlink',
    ],
    [
      'too many entries',
      () =>
        zip([
          { path: 'many/SKILL.md', data: skillMd('many') },
          ...Array.from({ length: 60 }, (_, i) => ({ path: `many/f${i}`, data: 'x' })),
        ]),
      413,
      'too_many_entries',
    ],
    [
      'over the compressed size',
      () =>
        zip([
          { path: 'big/SKILL.md', data: skillMd('big') },
          { path: 'big/noise', data: randomBytes(260_000).toString('base64') },
        ]),
      413,
      'zip_too_large',
    ],
    [
      'over the uncompressed size (a zip bomb)',
      () =>
        zip([
          { path: 'bomb/SKILL.md', data: skillMd('bomb') },
          { path: 'bomb/zeros', data: '\0'.repeat(3_000_000) },
        ]),
      413,
      'uncompressed_too_large',
    ],
    ['no SKILL.md', () => zip([{ path: 'bare/readme.txt', data: 'x' }]), 400, 'missing_skill_md'],
    [
      'two root folders',
      () =>
        zip([
          { path: 'a/SKILL.md', data: skillMd('a') },
          { path: 'b/x', data: 'x' },
        ]),
      400,
      'multiple_roots',
    ],
    [
      'no front matter',
      () => zip([{ path: 'fm/SKILL.md', data: '# fm\n' }]),
      400,
      'invalid_front_matter',
    ],
    [
      'a name that differs from the folder',
      () => zip([{ path: 'folder/SKILL.md', data: skillMd('other') }]),
      400,
      'name_mismatch',
    ],
  ];
  for (const [what, make, status, code] of refusals) {
    it(`refuses ${what} with ${code}`, async () => {
      const res = await upload(await make());
      expect(res.status).toBe(status);
      expect(res.body.error.code).toBe(code);
      expect(res.body.error.message).toEqual(expect.any(String));
    });
  }

  it('refuses a body that is not multipart, and a part that is not `file`', async () => {
    const res = await api.request('POST', `/v1/projects/${project.id}/skills`, {
      key: project.key,
      body: { file: 'x' },
    });
    expect(res.status).toBe(415);
    expect(res.body.error.code).toBe('unsupported_media_type');
    const wrong = await upload(await zip([{ path: 'w/SKILL.md', data: skillMd('w') }]), {
      field: 'zip',
    });
    expect(wrong.status).toBe(400);
    expect(wrong.body.error.code).toBe('invalid_upload');
  });
});

describe('manage', () => {
  it('lists, disables and deletes skills (and their zips)', async () => {
    const data = await zip([{ path: 'gone/SKILL.md', data: skillMd('gone') }]);
    await upload(data);
    const list = await api.request('GET', `/v1/projects/${project.id}/skills`, {
      key: project.key,
    });
    expect(list.body.skills.map((s: { name: string }) => s.name)).toContain('gone');
    const disabled = await api.request('PATCH', `/v1/projects/${project.id}/skills/gone`, {
      key: project.key,
      body: { enabled: false },
    });
    expect(disabled.body.enabled).toBe(false);
    const del = await api.request('DELETE', `/v1/projects/${project.id}/skills/gone`, {
      key: project.key,
    });
    expect(del.status).toBe(204);
    expect(await api.artifacts.stat(skillZipKey(project.id, 'gone', sha(data)))).toBeUndefined();
    expect(
      (await api.request('GET', `/v1/projects/${project.id}/skills/gone`, { key: project.key }))
        .status,
    ).toBe(404);
    expect(
      (await api.request('DELETE', `/v1/projects/${project.id}/skills/gone`, { key: project.key }))
        .status,
    ).toBe(404);
  });

  it("another project's key can neither upload to, read nor change this project's skills", async () => {
    const other = await api.createProject();
    const data = await zip([{ path: 'mine/SKILL.md', data: skillMd('mine') }]);
    await upload(data);
    expect((await upload(data, { key: other.key })).status).toBe(404);
    for (const [method, url, body] of [
      ['GET', `/v1/projects/${project.id}/skills`, undefined],
      ['GET', `/v1/projects/${project.id}/skills/mine`, undefined],
      ['PATCH', `/v1/projects/${project.id}/skills/mine`, { enabled: false }],
      ['POST', `/v1/projects/${project.id}/skills/mine/activate`, { version: sha(data) }],
      ['DELETE', `/v1/projects/${project.id}/skills/mine`, undefined],
    ] as const) {
      const res = await api.request(method, url, { key: other.key, body });
      expect(res.status, `${method} ${url}`).toBe(404);
      expect(res.body.error.code).toBe('not_found');
    }
    const still = await api.request('GET', `/v1/projects/${project.id}/skills/mine`, {
      key: project.key,
    });
    expect(still.body.enabled).toBe(true);
  });
});
