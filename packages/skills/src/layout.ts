// The shape a skill zip must have: exactly one root folder holding SKILL.md, every path unique.
// macOS's archiver adds a `__MACOSX/` folder of resource forks beside the real root; it is
// ignored (checked like every entry, never extracted) so zips made in Finder upload as is.
import { SkillPackageError } from './errors.ts';
import type { CheckedEntry } from './entry-rules.ts';

const IGNORED_ROOTS = new Set(['__MACOSX']);
export const SKILL_MD = 'SKILL.md';

/**
 * Where a skill's files are placed in a sandbox session, relative to its workdir. The one
 * builder of that path: the skills service places files there, and the prompt's
 * `<available_skills>`, the tool descriptions and the api's `location` all say it.
 */
export const skillLocation = (name: string): string => `skills/${name}`;

export interface SkillLayout {
  /** The root folder's name, which the front matter's `name` must equal. */
  readonly root: string;
  readonly skillMd: CheckedEntry;
  /** Files and folders under the root, SKILL.md included; ignored entries left out. */
  readonly entries: readonly CheckedEntry[];
}

export function checkLayout(entries: readonly CheckedEntry[]): SkillLayout {
  const kept = entries.filter((e) => !IGNORED_ROOTS.has(e.path.split('/')[0] ?? ''));

  const seen = new Map<string, CheckedEntry>();
  for (const entry of kept) {
    if (seen.has(entry.path)) {
      throw new SkillPackageError('duplicate_entry', `zip has two entries named ${entry.path}`, {
        details: { entry: entry.path },
      });
    }
    seen.set(entry.path, entry);
  }
  // A file at `a/b` and an entry `a/b/c` cannot both be extracted.
  for (const entry of kept) {
    const segments = entry.path.split('/');
    for (let i = 1; i < segments.length; i++) {
      const parent = seen.get(segments.slice(0, i).join('/'));
      if (parent !== undefined && !parent.isDirectory) {
        throw new SkillPackageError(
          'duplicate_entry',
          `zip entry ${entry.path} is inside ${parent.path}, which is a file`,
          { details: { entry: entry.path, file: parent.path } },
        );
      }
    }
  }

  const topFiles = kept.filter((e) => !e.isDirectory && !e.path.includes('/'));
  if (kept.length === 0 || topFiles.length > 0) {
    throw new SkillPackageError(
      'no_root_folder',
      `a skill zip must hold one folder named after the skill, with ${SKILL_MD} inside it` +
        (topFiles.length > 0 ? `; found files at the top level: ${names(topFiles)}` : ''),
      { details: { topLevelFiles: topFiles.map((e) => e.path).slice(0, 20) } },
    );
  }
  const roots = [...new Set(kept.map((e) => e.path.split('/')[0] ?? ''))].sort();
  const [root] = roots;
  if (roots.length > 1 || root === undefined) {
    throw new SkillPackageError(
      'multiple_roots',
      `a skill zip must hold exactly one root folder; found ${roots.length}: ${roots.slice(0, 10).join(', ')}`,
      { details: { roots: roots.slice(0, 20) } },
    );
  }
  const skillMd = seen.get(`${root}/${SKILL_MD}`);
  if (skillMd === undefined || skillMd.isDirectory) {
    throw new SkillPackageError('missing_skill_md', `the zip has no ${root}/${SKILL_MD}`, {
      details: { root },
    });
  }
  return { root, skillMd, entries: kept };
}

function names(entries: readonly CheckedEntry[]): string {
  const shown = entries.slice(0, 5).map((e) => e.path);
  return entries.length > 5 ? `${shown.join(', ')}, ...` : shown.join(', ');
}
