// builtin.read_file, write_file and list_files: the project's own files, kept in Postgres and
// shared by its agents, outliving every sandbox. Paths are normalised (no way above the root);
// sizes and counts are limited by [builtin]. Bad input fails the call with its own code.
import type { BuiltinConfig } from '@toolmesh/config';
import { ListFilesArgs, ReadFileArgs, WriteFileArgs } from '@toolmesh/skills';
import { FilePathError, normalizeFilePath, type SkillsStore } from '@toolmesh/store';
import { ToolError } from '@toolmesh/protocol';
import { defineTool } from '@toolmesh/tool-service';

const LIST_LIMIT = 1_000;

function pathOf(raw: string | undefined): string {
  try {
    return normalizeFilePath(raw ?? '/');
  } catch (err) {
    if (err instanceof FilePathError)
      throw new ToolError(err.message, { code: 'invalid_arguments' });
    throw err;
  }
}

export function fileTools(store: SkillsStore, limits: BuiltinConfig) {
  return [
    defineTool({
      name: 'read_file',
      description: "Reads a text file from the project's files.",
      args: ReadFileArgs,
      timeoutMs: 10_000,
      handler: async ({ path }, ctx) => {
        const p = pathOf(path);
        const file = await store.files.read(ctx.project, p);
        if (!file) throw new ToolError(`no file ${p}`, { code: 'not_found' });
        return {
          path: file.path,
          content: file.content,
          size: file.size,
          updated_at: file.updated_at.toISOString(),
        };
      },
    }),
    defineTool({
      name: 'write_file',
      description: "Writes a text file into the project's files.",
      args: WriteFileArgs,
      timeoutMs: 10_000,
      handler: async ({ path, content }, ctx) => {
        const p = pathOf(path);
        if (p === '/')
          throw new ToolError('the root is a folder, not a file', { code: 'invalid_arguments' });
        if (content.includes('\u0000')) {
          throw new ToolError('a text file cannot hold a NUL character', {
            code: 'invalid_arguments',
          });
        }
        const out = await store.files.write(ctx.project, p, content, {
          maxFileBytes: limits.file_max_bytes,
          maxFiles: limits.files_per_project,
          maxTotalBytes: limits.files_total_bytes,
        });
        if (!out.ok) {
          const what = {
            file_bytes: `the file is ${out.current} bytes, more than the ${out.limit} allowed`,
            files: `the project has ${out.current} files, the most allowed (${out.limit})`,
            total_bytes: `the project's files would exceed ${out.limit} bytes in all`,
          }[out.quota];
          throw new ToolError(what, {
            code: 'quota_exceeded',
            details: { quota: out.quota, limit: out.limit, current: out.current },
          });
        }
        return { path: out.file.path, size: out.file.size, created: out.created };
      },
    }),
    defineTool({
      name: 'list_files',
      description: "Lists the project's files under a folder.",
      args: ListFilesArgs,
      timeoutMs: 10_000,
      handler: async ({ path }, ctx) => {
        const p = pathOf(path);
        const rows = await store.files.list(ctx.project, p, { limit: LIST_LIMIT + 1 });
        return {
          path: p,
          files: rows.slice(0, LIST_LIMIT).map((f) => ({
            path: f.path,
            size: f.size,
            updated_at: f.updated_at.toISOString(),
          })),
          truncated: rows.length > LIST_LIMIT,
        };
      },
    }),
  ];
}
