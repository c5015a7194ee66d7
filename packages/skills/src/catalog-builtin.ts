// Arguments of the registry's built-in tools beyond the diagnostics: a file system per project
// (kept in Postgres, shared by the project's agents, outliving every sandbox) and full-text search
// over the project's documents. Limits on sizes and counts are the service's, from [builtin].
import { z } from 'zod';

/** Longest path accepted, in characters; each segment at most 255. */
export const MAX_FILE_PATH = 1_024;

const filePath = z
  .string()
  .min(1)
  .max(MAX_FILE_PATH)
  .describe(
    'A path in the project\'s files, e.g. "notes/todo.md" ("/" is the root; ".." cannot leave it)',
  );

export const ReadFileArgs = z.strictObject({ path: filePath });
export type ReadFileArgs = z.infer<typeof ReadFileArgs>;
export const WriteFileArgs = z.strictObject({
  path: filePath,
  content: z.string().describe('The whole new content of the file, as text'),
});
export type WriteFileArgs = z.infer<typeof WriteFileArgs>;
export const ListFilesArgs = z.strictObject({
  path: filePath.optional().describe('A folder to list (everything under it); the root by default'),
});
export type ListFilesArgs = z.infer<typeof ListFilesArgs>;

export const SearchDocumentsArgs = z.strictObject({
  query: z
    .string()
    .min(1)
    .max(1_000)
    .describe('Words to look for; "quoted phrases", OR and -excluded words work as in web search'),
  collection: z.string().min(1).max(64).optional().describe('Only this collection'),
  limit: z.number().int().min(1).max(50).optional().describe('Most results to return (default 10)'),
});
export type SearchDocumentsArgs = z.infer<typeof SearchDocumentsArgs>;
export const GetDocumentArgs = z.strictObject({
  id: z.string().min(1).max(256).describe('The document id a search returned'),
});
export type GetDocumentArgs = z.infer<typeof GetDocumentArgs>;

export const ExecutePythonArgs = z.strictObject({
  code: z.string().min(1).max(100_000).describe('A Python 3 program; what it prints is the result'),
  stdin: z.string().max(100_000).optional().describe('Text the program reads on stdin'),
  timeout_ms: z
    .number()
    .int()
    .min(1)
    .max(60_000)
    .optional()
    .describe('Wall-clock limit (default 5000; the service caps it)'),
});
export type ExecutePythonArgs = z.infer<typeof ExecutePythonArgs>;
