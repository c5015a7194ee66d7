// A file system per project (state.project_files): text files under normalised paths, with size
// and count quotas taken under a per-project lock so two writers cannot both slip past them.
import type { Db } from '../core/db.ts';

export class FilePathError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FilePathError';
  }
}

/**
 * A path made canonical: "/" plus its segments, with "." dropped and ".." applied. A path that
 * would climb above the root, holds a NUL or has an over-long segment is refused.
 */
export function normalizeFilePath(input: string, maxLength = 1_024): string {
  if (input.includes('\u0000')) throw new FilePathError('a path cannot hold a NUL character');
  const out: string[] = [];
  for (const seg of input.split('/')) {
    if (seg === '' || seg === '.') continue;
    if (seg === '..') {
      if (out.length === 0)
        throw new FilePathError(`path ${JSON.stringify(input)} leaves the root`);
      out.pop();
      continue;
    }
    if (seg.length > 255) throw new FilePathError('a path segment is longer than 255 characters');
    out.push(seg);
  }
  const path = `/${out.join('/')}`;
  if (path.length > maxLength)
    throw new FilePathError(`a path is longer than ${maxLength} characters`);
  return path;
}

export interface ProjectFile {
  path: string;
  content: string;
  size: number;
  created_at: Date;
  updated_at: Date;
}

export type FileEntry = Omit<ProjectFile, 'content'>;

export interface FileLimits {
  maxFileBytes: number;
  maxFiles: number;
  maxTotalBytes: number;
}

export type WriteOutcome =
  | { ok: true; file: FileEntry; created: boolean }
  | { ok: false; quota: 'file_bytes' | 'files' | 'total_bytes'; limit: number; current: number };

export interface FilesRepo {
  read(projectId: string, path: string): Promise<ProjectFile | undefined>;
  write(
    projectId: string,
    path: string,
    content: string,
    limits: FileLimits,
  ): Promise<WriteOutcome>;
  /** Files at or under `path` ("/" lists all), by path, `limit` after the `after` path. */
  list(
    projectId: string,
    path: string,
    o: { limit: number; after?: string | undefined },
  ): Promise<FileEntry[]>;
  delete(projectId: string, path: string): Promise<boolean>;
}

const ENTRY = 'path, size, created_at, updated_at';

export function createFilesRepo(db: Db): FilesRepo {
  return {
    read: async (projectId, path) =>
      (
        await db.query<ProjectFile>(
          'files_read',
          `SELECT path, content, size, created_at, updated_at FROM state.project_files
           WHERE project_id = $1 AND path = $2`,
          [projectId, path],
        )
      )[0],
    write: async (projectId, path, content, limits) => {
      const size = Buffer.byteLength(content, 'utf8');
      if (size > limits.maxFileBytes) {
        return { ok: false, quota: 'file_bytes', limit: limits.maxFileBytes, current: size };
      }
      return db.tx(async (tx) => {
        await tx.query('files_lock', `SELECT pg_advisory_xact_lock(hashtextextended($1, 7))`, [
          `files:${projectId}`,
        ]);
        const [usage] = await tx.query<{ files: string; bytes: string; old: number | null }>(
          'files_usage',
          `SELECT count(*) AS files, coalesce(sum(size), 0) AS bytes,
                  max(size) FILTER (WHERE path = $2) AS old
             FROM state.project_files WHERE project_id = $1`,
          [projectId, path],
        );
        const files = Number(usage?.files ?? 0);
        const bytes = Number(usage?.bytes ?? 0);
        const old = usage?.old ?? null;
        if (old === null && files + 1 > limits.maxFiles) {
          return { ok: false, quota: 'files', limit: limits.maxFiles, current: files };
        }
        if (bytes - (old ?? 0) + size > limits.maxTotalBytes) {
          return { ok: false, quota: 'total_bytes', limit: limits.maxTotalBytes, current: bytes };
        }
        const [file] = await tx.query<FileEntry>(
          'files_write',
          `INSERT INTO state.project_files (project_id, path, content, size)
           VALUES ($1, $2, $3, $4)
           ON CONFLICT (project_id, path)
           DO UPDATE SET content = EXCLUDED.content, size = EXCLUDED.size, updated_at = now()
           RETURNING ${ENTRY}`,
          [projectId, path, content, size],
        );
        return { ok: true, file: file as FileEntry, created: old === null };
      });
    },
    list: (projectId, path, o) =>
      db.query<FileEntry>(
        'files_list',
        `SELECT ${ENTRY} FROM state.project_files
         WHERE project_id = $1
           AND ($2 = '/' OR path = $2 OR starts_with(path, $2 || '/'))
           AND ($3::text IS NULL OR path > $3)
         ORDER BY path LIMIT $4`,
        [projectId, path, o.after ?? null, o.limit],
      ),
    delete: async (projectId, path) =>
      (
        await db.query(
          'files_delete',
          `DELETE FROM state.project_files WHERE project_id = $1 AND path = $2 RETURNING path`,
          [projectId, path],
        )
      ).length > 0,
  };
}
