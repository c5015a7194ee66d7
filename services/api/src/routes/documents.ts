// The project's documents over HTTP: loaded as JSON lines (one document per line, all or none),
// searched with the same full-text search builtin.search_documents runs, read and deleted by id.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { NewDocument, SkillsStore } from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { Id, ProjectParams } from '../schemas.ts';

const DOC_ID = /^[A-Za-z0-9_.:@-]{1,256}$/;
const DocId = z.string().regex(DOC_ID, 'must be 1-256 characters of [A-Za-z0-9_.:@-]');
const Line = z.strictObject({
  id: DocId,
  title: z.string().max(1_000).default(''),
  body: z.string().min(1),
  collection: Id.optional(),
  metadata: z.record(z.string(), z.unknown()).default({}),
});
const DocumentOut = z
  .object({
    id: z.string(),
    collection: z.string(),
    title: z.string(),
    body: z.string(),
    metadata: z.record(z.string(), z.unknown()),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Document' });
const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse };

export const documentRoutes =
  ({ store, auth, config }: RouteDeps<SkillsStore>): FastifyPluginAsyncZod =>
  async (app) => {
    const b = config.builtin;
    // JSON lines arrive as text and are parsed here, line by line, so an error names its line.
    app.addContentTypeParser(
      ['application/x-ndjson', 'application/jsonl'],
      { parseAs: 'string' },
      (_req, body, done) => done(null, body),
    );

    app.post(
      '/projects/:project/documents',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['documents'],
          summary:
            'Load documents from JSON lines ({id, title?, body, collection?, metadata?} each); all or none',
          params: ProjectParams,
          querystring: z.strictObject({ collection: Id.default('default') }),
          body: z.string().describe('application/x-ndjson: one document per line'),
          response: {
            200: z.object({ inserted: z.number().int(), updated: z.number().int() }),
            409: ErrorResponse,
            413: ErrorResponse,
            ...errors,
          },
        },
      },
      async (req) => {
        const { project } = req.params;
        const lines = req.body.split('\n').map((l) => l.trim());
        const docs: NewDocument[] = [];
        const issues: { line: number; message: string }[] = [];
        const seen = new Set<string>();
        lines.forEach((text, i) => {
          if (text === '' || issues.length >= 20) return;
          let value: unknown;
          try {
            value = JSON.parse(text);
          } catch (err) {
            issues.push({ line: i + 1, message: `not JSON: ${(err as Error).message}` });
            return;
          }
          const parsed = Line.safeParse(value);
          if (!parsed.success) {
            const first = parsed.error.issues[0];
            issues.push({
              line: i + 1,
              message: `${first?.path.join('.') || 'line'}: ${first?.message}`,
            });
            return;
          }
          const d = parsed.data;
          if (Buffer.byteLength(d.body, 'utf8') > b.document_max_bytes) {
            issues.push({
              line: i + 1,
              message: `body is larger than ${b.document_max_bytes} bytes`,
            });
            return;
          }
          if (d.body.includes('\u0000') || d.title.includes('\u0000')) {
            issues.push({ line: i + 1, message: 'a document cannot hold a NUL character' });
            return;
          }
          if (seen.has(d.id)) {
            issues.push({ line: i + 1, message: `id ${d.id} appears twice in this request` });
            return;
          }
          seen.add(d.id);
          docs.push({
            id: d.id,
            collection: d.collection ?? req.query.collection,
            title: d.title,
            body: d.body,
            metadata: d.metadata,
          });
        });
        if (issues.length > 0) {
          throw new ApiError('invalid_request', `line ${issues[0]?.line}: ${issues[0]?.message}`, {
            issues,
          });
        }
        if (docs.length === 0) throw new ApiError('invalid_request', 'no documents in the body');
        if (docs.length > b.documents_per_request) {
          throw new ApiError(
            'payload_too_large',
            `${docs.length} documents in one request; at most ${b.documents_per_request}`,
          );
        }
        const current = await store.documents.count(project);
        if (current + docs.length > b.documents_per_project) {
          throw new ApiError(
            { code: 'quota_exceeded', status: 409 },
            `the project would have more than ${b.documents_per_project} documents`,
            { quota: 'documents', limit: b.documents_per_project, current },
          );
        }
        return store.documents.upsert(project, docs);
      },
    );

    app.get(
      '/projects/:project/documents',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['documents'],
          summary:
            'Search the documents (websearch syntax), best matches first, snippets in <mark>',
          params: ProjectParams,
          querystring: z.strictObject({
            query: z.string().min(1).max(1_000),
            collection: Id.optional(),
            limit: z.coerce.number().int().min(1).max(50).default(b.search_default_limit),
          }),
          response: {
            200: z.object({
              results: z.array(
                z.object({
                  id: z.string(),
                  collection: z.string(),
                  title: z.string(),
                  snippet: z.string(),
                  rank: z.number(),
                  metadata: z.record(z.string(), z.unknown()),
                }),
              ),
            }),
            ...errors,
          },
        },
      },
      async (req) => {
        const hits = await store.documents.search(req.params.project, req.query);
        return {
          results: hits.map((h) => ({
            id: h.doc_id,
            collection: h.collection,
            title: h.title,
            snippet: h.snippet,
            rank: h.rank,
            metadata: h.metadata,
          })),
        };
      },
    );

    app.get(
      '/projects/:project/documents/:id',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['documents'],
          summary: 'A whole document',
          params: ProjectParams.extend({ id: DocId }),
          response: { 200: DocumentOut, ...errors },
        },
      },
      async (req) => {
        const d = await store.documents.get(req.params.project, req.params.id);
        if (!d) throw notFound('document', req.params.id);
        return {
          id: d.doc_id,
          collection: d.collection,
          title: d.title,
          body: d.body,
          metadata: d.metadata,
          created_at: d.created_at.toISOString(),
          updated_at: d.updated_at.toISOString(),
        };
      },
    );

    app.delete(
      '/projects/:project/documents/:id',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['documents'],
          summary: 'Delete a document',
          params: ProjectParams.extend({ id: DocId }),
          response: { 204: z.null(), ...errors },
        },
      },
      async (req, reply) => {
        if (!(await store.documents.delete(req.params.project, req.params.id))) {
          throw notFound('document', req.params.id);
        }
        return reply.status(204).send(null);
      },
    );
  };
