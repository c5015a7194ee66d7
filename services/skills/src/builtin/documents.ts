// builtin.search_documents and get_document: full-text search over the documents a project
// loaded through the api (POST /v1/projects/:p/documents), and a whole document by id.
import type { BuiltinConfig } from '@toolmesh/config';
import { ToolError } from '@toolmesh/protocol';
import { GetDocumentArgs, SearchDocumentsArgs } from '@toolmesh/skills';
import type { SkillsStore } from '@toolmesh/store';
import { defineTool } from '@toolmesh/tool-service';

export function documentTools(store: SkillsStore, limits: BuiltinConfig) {
  return [
    defineTool({
      name: 'search_documents',
      description: "Full-text search over the project's documents.",
      args: SearchDocumentsArgs,
      timeoutMs: 30_000,
      handler: async ({ query, collection, limit }, ctx) => {
        const hits = await store.documents.search(ctx.project, {
          query,
          collection,
          limit: Math.min(limit ?? limits.search_default_limit, 50),
        });
        return {
          query,
          results: hits.map((h) => ({
            id: h.doc_id,
            collection: h.collection,
            title: h.title,
            snippet: h.snippet,
            rank: Math.round(h.rank * 10_000) / 10_000,
            metadata: h.metadata,
          })),
        };
      },
    }),
    defineTool({
      name: 'get_document',
      description: 'Returns a whole document by id.',
      args: GetDocumentArgs,
      timeoutMs: 10_000,
      handler: async ({ id }, ctx) => {
        const d = await store.documents.get(ctx.project, id);
        if (!d) throw new ToolError(`no document ${JSON.stringify(id)}`, { code: 'not_found' });
        return {
          id: d.doc_id,
          collection: d.collection,
          title: d.title,
          body: d.body,
          metadata: d.metadata,
          updated_at: d.updated_at.toISOString(),
        };
      },
    }),
  ];
}
