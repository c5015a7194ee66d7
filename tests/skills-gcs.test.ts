// The example image skill with the artifact store on GCS (our fake server, the real SDK): the
// skill zip is uploaded to the bucket, run_cmd reads it from there, and the PNG it draws is
// stored in the bucket and downloaded through the api.
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startFakeGcs, type FakeGcs } from '@toolmesh/testing';
import { REPO_ROOT } from './support/mesh.ts';
import { startSkillsMesh, type SkillsMesh } from './support/skills-mesh.ts';

let gcs: FakeGcs;
let mesh: SkillsMesh;
beforeAll(async () => {
  gcs = await startFakeGcs();
  mesh = await startSkillsMesh({
    CG__ARTIFACTS__KIND: 'gcs',
    CG__ARTIFACTS__GCS_BUCKET: 'toolmesh-test',
    CG__ARTIFACTS__GCS_PREFIX: 'mesh',
    CG__ARTIFACTS__GCS_API_ENDPOINT: gcs.url,
  });
  await mesh.startSkills();
}, 60_000);
afterAll(async () => {
  await mesh?.close();
  await gcs?.stop();
});

it('uploads the skill to the bucket, runs it, and stores the PNG there', async () => {
  const version = await mesh.uploadSkill(join(REPO_ROOT, 'examples/skills/draw-image'));
  const names = () => gcs.objects('toolmesh-test').map((o) => o.name);
  expect(
    names().some((n) => n.includes(`skills/${mesh.project.id}/draw-image/${version}/skill.zip`)),
  ).toBe(true);

  const r = await mesh.client.callTool({
    project: mesh.project.id,
    channel: 'main',
    tool: 'skills.run_cmd',
    arguments: {
      skill: 'draw-image',
      command: 'python3 draw.py --out pic.png --width 40 --height 30',
      outputs: ['pic.png'],
    },
    timeoutMs: 60_000,
  });
  expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
  const artifact = (r.content.result as { artifacts: { artifact_id: string }[] }).artifacts[0]!;
  expect(
    names().some((n) => n.includes(`artifacts/${mesh.project.id}/${artifact.artifact_id}/pic.png`)),
  ).toBe(true);

  const meta = await mesh.api.request(
    'GET',
    `/v1/projects/${mesh.project.id}/artifacts/${artifact.artifact_id}`,
    { key: mesh.project.key },
  );
  expect(meta.body.mime).toBe('image/png');
  const res = await mesh.api.app.inject({
    method: 'GET',
    url: `/v1/projects/${mesh.project.id}/artifacts/${artifact.artifact_id}/content`,
    headers: { authorization: `Bearer ${mesh.project.key}` },
  });
  expect(res.statusCode).toBe(200);
  expect(res.rawPayload.subarray(1, 4).toString()).toBe('PNG');
  expect(res.rawPayload.readUInt32BE(16)).toBe(40);
});
