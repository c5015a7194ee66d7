// Artifact downloads: metadata with a download URL, the bytes streamed back unchanged, and
// nothing for another project's key.
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { artifactKey } from '@toolmesh/artifacts';
import { startTestApi, type TestApi } from '../test/support.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

async function storeArtifact(projectId: string, bytes: Buffer, filename = 'picture.png') {
  const artifactId = randomUUID();
  const put = await api.artifacts.put(artifactKey(projectId, artifactId, filename), bytes);
  await api.store.artifacts.insert({
    artifact_id: artifactId,
    project_id: projectId,
    filename,
    mime: 'image/png',
    size_bytes: put.size,
    sha256: put.sha256,
    storage_uri: put.uri,
    tool_call_id: 'call-1',
  });
  return artifactId;
}

it('returns metadata and streams the bytes back unchanged', async () => {
  const p = await api.createProject();
  const bytes = randomBytes(300_000);
  const id = await storeArtifact(p.id, bytes);
  const meta = await api.request('GET', `/v1/projects/${p.id}/artifacts/${id}`, { key: p.key });
  expect(meta.status).toBe(200);
  expect(meta.body).toMatchObject({
    artifact_id: id,
    filename: 'picture.png',
    mime: 'image/png',
    size_bytes: bytes.length,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    download_url: `/v1/projects/${p.id}/artifacts/${id}/content`,
  });
  const res = await api.app.inject({
    method: 'GET',
    url: meta.body.download_url as string,
    headers: { authorization: `Bearer ${p.key}` },
  });
  expect(res.statusCode).toBe(200);
  expect(res.headers['content-type']).toBe('image/png');
  expect(Buffer.compare(res.rawPayload, bytes)).toBe(0);
});

it('answers 404 for an unknown artifact, 400 for a bad id, and 404 to another project', async () => {
  const p = await api.createProject();
  const other = await api.createProject();
  const id = await storeArtifact(p.id, Buffer.from('x'));
  expect(
    (await api.request('GET', `/v1/projects/${p.id}/artifacts/${randomUUID()}`, { key: p.key }))
      .status,
  ).toBe(404);
  const bad = await api.request('GET', `/v1/projects/${p.id}/artifacts/not-a-uuid`, { key: p.key });
  expect(bad.status).toBe(400);
  expect(bad.body.error.code).toBe('invalid_id');
  for (const url of [
    `/v1/projects/${p.id}/artifacts/${id}`,
    `/v1/projects/${p.id}/artifacts/${id}/content`,
  ]) {
    const res = await api.request('GET', url, { key: other.key });
    expect(res.status).toBe(404);
    expect(res.body.error.code).toBe('not_found');
  }
});
