// Artifacts: metadata, and the bytes streamed from the artifact store (or a signed URL where the
// store can make one, so large downloads bypass the api).
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { artifactKey } from '@toolmesh/artifacts';
import type { ArtifactRecord, SkillsStore } from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ErrorResponse, notFound } from '../errors.ts';
import { ProjectParams, Uuid } from '../schemas.ts';

const ArtifactOut = z
  .object({
    artifact_id: z.string(),
    filename: z.string(),
    mime: z.string(),
    size_bytes: z.number(),
    sha256: z.string(),
    tool_call_id: z.string().nullable(),
    created_at: z.string(),
    storage_uri: z
      .string()
      .describe('where the store keeps it: file:///abs/path or gcs://bucket/key'),
    download_url: z
      .string()
      .describe('a signed URL where the store supports one, else the content route'),
  })
  .meta({ id: 'Artifact' });

const Params = ProjectParams.extend({ artifact_id: Uuid });
const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse };
const SIGNED_URL_TTL_SEC = 900;

export const artifactRoutes =
  ({ store, auth, artifacts }: RouteDeps<SkillsStore>): FastifyPluginAsyncZod =>
  async (app) => {
    const find = async (project: string, id: string): Promise<ArtifactRecord> => {
      const a = await store.artifacts.get(project, id);
      if (!a) throw notFound('artifact', id);
      return a;
    };

    app.get(
      '/projects/:project/artifacts/:artifact_id',
      {
        onRequest: auth.requireProject,
        schema: { tags: ['artifacts'], params: Params, response: { 200: ArtifactOut, ...errors } },
      },
      async (req) => {
        const a = await find(req.params.project, req.params.artifact_id);
        const key = artifactKey(a.project_id, a.artifact_id, a.filename);
        const signed = await artifacts.signedUrl(key, SIGNED_URL_TTL_SEC);
        return {
          artifact_id: a.artifact_id,
          filename: a.filename,
          mime: a.mime,
          size_bytes: a.size_bytes,
          sha256: a.sha256,
          tool_call_id: a.tool_call_id,
          created_at: a.created_at.toISOString(),
          storage_uri: a.storage_uri,
          download_url: signed ?? `/v1/projects/${a.project_id}/artifacts/${a.artifact_id}/content`,
        };
      },
    );

    app.get(
      '/projects/:project/artifacts/:artifact_id/content',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['artifacts'],
          summary: 'The artifact bytes, streamed',
          params: Params,
          // Streams are sent as they are; this schema only documents the route.
          response: { 200: z.any().describe('the artifact bytes, with its MIME type'), ...errors },
        },
      },
      async (req, reply) => {
        const a = await find(req.params.project, req.params.artifact_id);
        const stream = await artifacts
          .get(artifactKey(a.project_id, a.artifact_id, a.filename))
          .catch((err: unknown) => {
            if ((err as { code?: string }).code === 'not_found')
              throw notFound('artifact content', a.artifact_id);
            throw err;
          });
        return reply
          .type(a.mime)
          .header('content-length', a.size_bytes)
          .header('content-disposition', `attachment; filename="${a.filename.replace(/"/g, '')}"`)
          .send(stream);
      },
    );
  };
