// The operator's catalog: a folder of server.json files (`[catalog] dir`), read when asked (so an
// operator adds or removes a file without a restart). Each `*.json` file directly in the folder
// is one entry, known by its server.json `name`; a file that does not parse or validate is listed
// with its error rather than hiding the rest. Two files with one name: the first by file name wins,
// the second is listed as invalid.
// Reading is asynchronous and parsing goes one file at a time with a turn of the event loop
// between files, so a listing holds the loop for one file's parse at most (MAX_FILE_BYTES), not
// for the folder; a file is parsed again only when its size or modification time changed.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate as nextTurn } from 'node:timers/promises';
import { issuesOf, ServerJson } from './server-json.ts';

/** A catalog file larger than this is refused (a server.json is a few KB). */
const MAX_FILE_BYTES = 1_048_576;
/** Files read from the folder at most. */
const MAX_FILES = 1_000;

export interface CatalogEntry {
  file: string;
  entry: ServerJson;
}

export interface CatalogListing {
  configured: boolean;
  entries: CatalogEntry[];
  invalid: { file: string; error: string }[];
}

/** Parsed files by path, with the size and time they had: unchanged files are not read again. */
const parsedFiles = new Map<string, { size: number; mtimeMs: number; entry: ServerJson | Error }>();

async function parseFile(path: string, size: number, mtimeMs: number): Promise<ServerJson> {
  const known = parsedFiles.get(path);
  if (known && known.size === size && known.mtimeMs === mtimeMs) {
    if (known.entry instanceof Error) throw known.entry;
    return known.entry;
  }
  const text = await readFile(path, 'utf8');
  await nextTurn();
  let entry: ServerJson | Error;
  try {
    const parsed = ServerJson.safeParse(JSON.parse(text));
    entry = parsed.success
      ? parsed.data
      : new Error(
          issuesOf(parsed.error)
            .map((i) => `${i.path}: ${i.message}`)
            .join('; '),
        );
  } catch (err) {
    entry = err as Error;
  }
  if (parsedFiles.size >= MAX_FILES * 2) parsedFiles.clear();
  parsedFiles.set(path, { size, mtimeMs, entry });
  if (entry instanceof Error) throw entry;
  return entry;
}

export async function readCatalog(dir: string): Promise<CatalogListing> {
  if (dir === '') return { configured: false, entries: [], invalid: [] };
  const names = (await readdir(dir)).filter((n) => n.endsWith('.json')).sort();
  const entries: CatalogEntry[] = [];
  const invalid: CatalogListing['invalid'] = [];
  const seen = new Set<string>();
  for (const file of names.slice(0, MAX_FILES)) {
    const path = join(dir, file);
    try {
      const st = await stat(path);
      if (!st.isFile()) continue;
      if (st.size > MAX_FILE_BYTES) throw new Error(`larger than ${MAX_FILE_BYTES} bytes`);
      const entry = await parseFile(path, st.size, st.mtimeMs);
      if (seen.has(entry.name)) throw new Error(`${entry.name} is listed by an earlier file`);
      seen.add(entry.name);
      entries.push({ file, entry });
    } catch (err) {
      invalid.push({ file, error: (err as Error).message.slice(0, 500) });
    }
  }
  return { configured: true, entries, invalid };
}

/** One entry by its server.json name, or undefined. */
export async function findInCatalog(dir: string, name: string): Promise<CatalogEntry | undefined> {
  return (await readCatalog(dir)).entries.find((e) => e.entry.name === name);
}
