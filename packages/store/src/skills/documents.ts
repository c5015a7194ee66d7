// Searchable documents of a project (state.documents): loaded through the api, found with
// Postgres full-text search (English stemming, title above body), each hit with a snippet whose
// matching words are wrapped in <mark>. Queries use websearch syntax: words, "phrases", OR, -not.
import type { Db } from '../core/db.ts';

export interface Document {
  doc_id: string;
  collection: string;
  title: string;
  body: string;
  metadata: Record<string, unknown>;
  created_at: Date;
  updated_at: Date;
}

export interface NewDocument {
  id: string;
  collection: string;
  title: string;
  body: string;
  metadata: Record<string, unknown>;
}

export interface DocumentHit {
  doc_id: string;
  collection: string;
  title: string;
  snippet: string;
  rank: number;
  metadata: Record<string, unknown>;
}

export interface DocumentsRepo {
  /** Inserts or replaces documents by id, in one transaction; returns how many were new. */
  upsert(projectId: string, docs: NewDocument[]): Promise<{ inserted: number; updated: number }>;
  get(projectId: string, id: string): Promise<Document | undefined>;
  search(
    projectId: string,
    q: { query: string; collection?: string | undefined; limit: number },
  ): Promise<DocumentHit[]>;
  delete(projectId: string, id: string): Promise<boolean>;
  count(projectId: string): Promise<number>;
}

export function createDocumentsRepo(db: Db): DocumentsRepo {
  return {
    upsert: async (projectId, docs) => {
      if (docs.length === 0) return { inserted: 0, updated: 0 };
      const rows = await db.query<{ inserted: boolean }>(
        'documents_upsert',
        `INSERT INTO state.documents (project_id, doc_id, collection, title, body, metadata)
         SELECT $1, d.id, d.collection, d.title, d.body, d.metadata
           FROM jsonb_to_recordset($2::jsonb)
             AS d(id text, collection text, title text, body text, metadata jsonb)
         ON CONFLICT (project_id, doc_id) DO UPDATE
           SET collection = EXCLUDED.collection, title = EXCLUDED.title, body = EXCLUDED.body,
               metadata = EXCLUDED.metadata, updated_at = now()
         RETURNING (xmax = 0) AS inserted`,
        [projectId, JSON.stringify(docs)],
      );
      const inserted = rows.filter((r) => r.inserted).length;
      return { inserted, updated: rows.length - inserted };
    },
    get: async (projectId, id) =>
      (
        await db.query<Document>(
          'documents_get',
          `SELECT doc_id, collection, title, body, metadata, created_at, updated_at
             FROM state.documents WHERE project_id = $1 AND doc_id = $2`,
          [projectId, id],
        )
      )[0],
    search: (projectId, q) =>
      db.query<DocumentHit>(
        'documents_search',
        `WITH q AS (SELECT websearch_to_tsquery('english', $2) AS tsq),
         hits AS (
           SELECT d.doc_id, d.collection, d.title, d.body, d.metadata,
                  ts_rank_cd(d.tsv, q.tsq) AS rank
             FROM state.documents d, q
            WHERE d.project_id = $1 AND d.tsv @@ q.tsq
              AND ($3::text IS NULL OR d.collection = $3)
            ORDER BY rank DESC, d.doc_id
            LIMIT $4)
         SELECT h.doc_id, h.collection, h.title, h.metadata, h.rank::float8 AS rank,
                ts_headline('english', h.body, q.tsq,
                  'StartSel=<mark>, StopSel=</mark>, MaxWords=30, MinWords=10, MaxFragments=2, FragmentDelimiter=" … "')
                  AS snippet
           FROM hits h, q
          ORDER BY h.rank DESC, h.doc_id`,
        [projectId, q.query, q.collection ?? null, q.limit],
      ),
    delete: async (projectId, id) =>
      (
        await db.query(
          'documents_delete',
          `DELETE FROM state.documents WHERE project_id = $1 AND doc_id = $2 RETURNING doc_id`,
          [projectId, id],
        )
      ).length > 0,
    count: async (projectId) =>
      Number(
        (
          await db.query<{ n: string }>(
            'documents_count',
            `SELECT count(*) AS n FROM state.documents WHERE project_id = $1`,
            [projectId],
          )
        )[0]?.n ?? 0,
      ),
  };
}
