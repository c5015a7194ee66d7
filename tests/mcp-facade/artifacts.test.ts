// Artifacts over the facade: the example image skill run through skills.run_cmd writes a PNG; the
// tool result carries it as a resource_link, resources/read returns its bytes (a blob with its
// MIME type), and a session of another project cannot read it.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpError, type ResourceLink } from '@modelcontextprotocol/sdk/types.js';
import { REPO_ROOT } from '../support/mesh.ts';
import { startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
beforeAll(async () => {
  mesh = await startFacadeMesh();
  await mesh.uploadSkill(join(REPO_ROOT, 'examples/skills/draw-image'));
}, 60_000);
afterAll(async () => mesh?.close());

describe('artifacts as resources', () => {
  it('returns a written image as a resource link and reads it back', async () => {
    const client = await mesh.connect();
    const res = await client.callTool(
      {
        name: 'skills__run_cmd',
        arguments: {
          skill: 'draw-image',
          command: 'python3 draw.py --out out/pic.png --caption hi --width 80 --height 60',
          outputs: ['out/pic.png'],
        },
      },
      undefined,
      { timeout: 60_000 },
    );
    expect(res.isError, JSON.stringify(res.content)).toBeFalsy();
    const links = (res.content as { type: string }[]).filter(
      (c): c is ResourceLink => c.type === 'resource_link',
    );
    expect(links).toHaveLength(1);
    const link = links[0]!;
    expect(link).toMatchObject({
      uri: expect.stringMatching(/^toolmesh:\/\/artifacts\//),
      mimeType: 'image/png',
    });

    const read = await client.readResource({ uri: link.uri });
    const content = read.contents[0] as { blob: string; mimeType: string };
    expect(content.mimeType).toBe('image/png');
    const png = Buffer.from(content.blob, 'base64');
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(png.readUInt32BE(16)).toBe(80);
    expect(png.length).toBe(link.size);

    const other = await mesh.api.createProject();
    const theirs = await mesh.connect({ project: other.id, key: other.key });
    const err = await theirs.readResource({ uri: link.uri }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(McpError);
    expect((err as McpError).message).toContain('not found');
  });
});
