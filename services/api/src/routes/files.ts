// The project's files over HTTP: the same store builtin.read_file, write_file and list_files use,
// so what an agent wrote is one GET away and a file put here is one read_file away. Paths are
// normalised the same way (no way above the root); quotas are [builtin]'s.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { MAX_FILE_PATH } from '@toolmesh/skills';
import {
  type FileEntry,
  FilePathError,
  normalizeFilePath,
  type SkillsStore,
} from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { ProjectParams } from '../schemas.ts';

const PathQuery = z.string().min(1).max(MAX_FILE_PATH).describe('e.g. "notes/todo.md"');
const FileEntryOut = z
  .object({
    path: z.string(),
    size: z.number().int(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'FileEntry' });
const entryOut = (f: FileEntry) => ({
  path: f.path,
  size: f.size,
  created_at: f.created_at.toISOString(),
  updated_at: f.updated_at.toISOString(),
});
const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse };

function pathOf(raw: string): string {
  try {
    return normalizeFilePath(raw);
  } catch (err) {
    if (err instanceof FilePathError)
      throw new ApiError('invalid_request', err.message, { field: 'path' });
    throw err;
  }
}

export const fileRoutes =
  ({ store, auth, config }: RouteDeps<SkillsStore>): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      '/projects/:project/files',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['files'],
          summary: "The project's files at or under a folder, by path, paged",
          params: ProjectParams,
          querystring: z.strictObject({
            path: PathQuery.default('/'),
            limit: z.coerce.number().int().min(1).max(1_000).default(100),
            after: z.string().max(MAX_FILE_PATH).optional(),
          }),
          response: {
            200: z.object({ files: z.array(FileEntryOut), next: z.string().nullable() }),
            ...errors,
          },
        },
      },
      async (req) => {
        const { limit, after } = req.query;
        const rows = await store.files.list(req.params.project, pathOf(req.query.path), {
          limit: limit + 1,
          after,
        });
        const page = rows.slice(0, limit);
        return {
          files: page.map(entryOut),
          next: rows.length > limit ? (page.at(-1)?.path ?? null) : null,
        };
      },
    );

    app.get(
      '/projects/:project/files/content',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['files'],
          summary: 'A file with its content',
          params: ProjectParams,
          querystring: z.strictObject({ path: PathQuery }),
          response: { 200: FileEntryOut.extend({ content: z.string() }), ...errors },
        },
      },
      async (req) => {
        const path = pathOf(req.query.path);
        const f = await store.files.read(req.params.project, path);
        if (!f) throw notFound('file', path);
        return { ...entryOut(f), content: f.content };
      },
    );

    app.put(
      '/projects/:project/files/content',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['files'],
          summary: 'Write a file (created, or replaced whole)',
          params: ProjectParams,
          querystring: z.strictObject({ path: PathQuery }),
          body: z.strictObject({ content: z.string() }),
          response: {
            200: FileEntryOut,
            201: FileEntryOut,
            409: ErrorResponse,
            413: ErrorResponse,
            ...errors,
          },
        },
      },
      async (req, reply) => {
        const path = pathOf(req.query.path);
        if (path === '/') throw new ApiError('invalid_request', 'the root is a folder, not a file');
        if (req.body.content.includes('\u0000')) {
          throw new ApiError('invalid_request', 'a text file cannot hold a NUL character');
        }
        const b = config.builtin;
        const out = await store.files.write(req.params.project, path, req.body.content, {
          maxFileBytes: b.file_max_bytes,
          maxFiles: b.files_per_project,
          maxTotalBytes: b.files_total_bytes,
        });
        if (!out.ok) {
          const details = { quota: out.quota, limit: out.limit, current: out.current };
          if (out.quota === 'file_bytes') {
            throw new ApiError(
              'payload_too_large',
              `the file is larger than ${out.limit} bytes`,
              details,
            );
          }
          throw new ApiError(
            { code: 'quota_exceeded', status: 409 },
            out.quota === 'files'
              ? `the project has ${out.current} files, the most allowed`
              : `the project's files would exceed ${out.limit} bytes in all`,
            details,
          );
        }
        const f = await store.files.read(req.params.project, path);
        return reply
          .status(out.created ? 201 : 200)
          .send(entryOut(f ?? { ...out.file, content: '' }));
      },
    );

    app.delete(
      '/projects/:project/files/content',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['files'],
          summary: 'Delete a file',
          params: ProjectParams,
          querystring: z.strictObject({ path: PathQuery }),
          response: { 204: z.null(), ...errors },
        },
      },
      async (req, reply) => {
        const path = pathOf(req.query.path);
        if (!(await store.files.delete(req.params.project, path))) throw notFound('file', path);
        return reply.status(204).send(null);
      },
    );
  };
