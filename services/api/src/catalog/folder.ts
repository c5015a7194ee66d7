// The operator's catalog: a folder of server.json files (`[catalog] dir`), read when asked (so an
// operator adds or removes a file without a restart). Each `*.json` file directly in the folder
// is one entry, known by its server.json `name`; a file that does not parse or validate is listed
// with its error rather than hiding the rest. Two files with one name: the first by file name wins,
// the second is listed as invalid.
import { readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
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
      const parsed = ServerJson.safeParse(JSON.parse(await readFile(path, 'utf8')));
      if (!parsed.success) {
        throw new Error(
          issuesOf(parsed.error)
            .map((i) => `${i.path}: ${i.message}`)
            .join('; '),
        );
      }
      if (seen.has(parsed.data.name))
        throw new Error(`${parsed.data.name} is listed by an earlier file`);
      seen.add(parsed.data.name);
      entries.push({ file, entry: parsed.data });
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
