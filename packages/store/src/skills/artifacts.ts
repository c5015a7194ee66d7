// Artifact records (resource.artifacts): files produced by tool calls, stored in the artifact
// store; this table says what they are and where.
import type { Db } from '../core/db.ts';

export interface ArtifactRecord {
  artifact_id: string;
  project_id: string;
  filename: string;
  mime: string;
  size_bytes: number;
  sha256: string;
  storage_uri: string;
  tool_call_id: string | null;
  created_at: Date;
}

export type NewArtifact = Omit<ArtifactRecord, 'created_at'>;

export interface ArtifactsRepo {
  insert(a: NewArtifact): Promise<ArtifactRecord>;
  get(projectId: string, artifactId: string): Promise<ArtifactRecord | undefined>;
}

const COLUMNS = `artifact_id, project_id, filename, mime, size_bytes::float8 AS size_bytes, sha256,
  storage_uri, tool_call_id, created_at`;

export function createArtifactsRepo(db: Db): ArtifactsRepo {
  return {
    insert: async (a) =>
      (
        await db.query<ArtifactRecord>(
          'artifacts_insert',
          `INSERT INTO resource.artifacts
             (artifact_id, project_id, filename, mime, size_bytes, sha256, storage_uri, tool_call_id)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${COLUMNS}`,
          [
            a.artifact_id,
            a.project_id,
            a.filename,
            a.mime,
            a.size_bytes,
            a.sha256,
            a.storage_uri,
            a.tool_call_id,
          ],
        )
      )[0]!,
    get: async (projectId, artifactId) =>
      (
        await db.query<ArtifactRecord>(
          'artifacts_get',
          `SELECT ${COLUMNS} FROM resource.artifacts WHERE project_id = $1 AND artifact_id = $2`,
          [projectId, artifactId],
        )
      )[0],
  };
}
