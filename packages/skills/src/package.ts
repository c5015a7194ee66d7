// Validating a skill zip end to end: central directory, layout, SKILL.md front matter, then
// every entry inflated under the guard. `inspectSkillZip` drains the data (it only proves the
// zip is what it claims); `extractSkillZip` hands the same checked streams to a writer.
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { finished } from 'node:stream/promises';
import type { CheckedEntry } from './entry-rules.ts';
import { SkillPackageError } from './errors.ts';
import { parseSkillMd } from './front-matter.ts';
import { checkLayout } from './layout.ts';
import { MAX_SKILL_MD_BYTES, resolveLimits } from './limits.ts';
import type { SkillZipLimits } from './limits.ts';
import { openSkillZip } from './zip-reader.ts';

export interface SkillFile {
  /** Relative to the skill's root folder: `SKILL.md`, `scripts/run.py`. */
  path: string;
  size: number;
}

export interface SkillPackage {
  name: string;
  description: string;
  /** Every field of SKILL.md's front matter, as written. */
  frontMatter: Record<string, unknown>;
  /** Front matter fields the Agent Skills format does not define (kept in frontMatter). */
  unknownFields: string[];
  /** Lowercase hex sha256 of the zip's bytes: the skill version. */
  sha256: string;
  /** Size of the zip itself. */
  sizeBytes: number;
  /** Regular files, sorted by path. */
  files: SkillFile[];
}

/** One checked entry on its way out. */
export interface SkillEntry {
  readonly entry: CheckedEntry;
  readonly root: string;
  /** Path relative to the root folder; `''` for the root folder itself. */
  readonly relPath: string;
  /** The file's data, guarded; undefined for folders. Consume the stream it returns. */
  readonly open: (() => Readable) | undefined;
}

export type SkillEntrySink = (item: SkillEntry) => Promise<void>;

async function drain({ open }: SkillEntry): Promise<void> {
  if (open === undefined) return;
  await finished(open().resume());
}

/** Validates a skill zip (bytes, or a path to one) and describes it. */
export function inspectSkillZip(
  data: Uint8Array | string,
  limits: Partial<SkillZipLimits> = {},
): Promise<SkillPackage> {
  return readSkillZip(data, limits, drain);
}

/** The shared walk: every check, then each entry handed to `sink` in directory order. */
export async function readSkillZip(
  data: Uint8Array | string,
  limits: Partial<SkillZipLimits>,
  sink: SkillEntrySink,
): Promise<SkillPackage> {
  const opened = await openSkillZip(data, resolveLimits(limits));
  try {
    const { root, skillMd, entries } = checkLayout(opened.entries);
    if (skillMd.size > MAX_SKILL_MD_BYTES) {
      throw new SkillPackageError(
        'skill_md_too_large',
        `SKILL.md is ${skillMd.size} bytes; at most ${MAX_SKILL_MD_BYTES} are allowed`,
        { details: { size: skillMd.size, max: MAX_SKILL_MD_BYTES } },
      );
    }
    const counter = { total: 0 };
    // SKILL.md first: a bad front matter fails before anything else is inflated.
    const skillMdBytes = await buffer(opened.open(skillMd, counter));
    const { name, description, frontMatter, unknownFields } = parseSkillMd(
      decodeUtf8(skillMdBytes),
      root,
    );

    for (const entry of entries) {
      const relPath = entry.path === root ? '' : entry.path.slice(root.length + 1);
      let open: (() => Readable) | undefined;
      if (entry === skillMd) open = () => Readable.from([skillMdBytes]);
      else if (!entry.isDirectory) open = () => opened.open(entry, counter);
      await sink({ entry, root, relPath, open });
    }

    const files = entries
      .filter((e) => !e.isDirectory)
      .map((e) => ({ path: e.path.slice(root.length + 1), size: e.size }))
      .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
    return {
      name,
      description,
      frontMatter,
      unknownFields,
      sha256: opened.sha256,
      sizeBytes: opened.sizeBytes,
      files,
    };
  } finally {
    opened.zip.close();
  }
}

function decodeUtf8(bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch (err) {
    throw new SkillPackageError('invalid_front_matter', 'SKILL.md is not valid UTF-8', {
      cause: err,
    });
  }
}
