// SKILL.md's YAML front matter: the block between a leading `---` line and the next `---` (or
// `...`) line. `name` must equal the root folder and be a valid id; `description` is what
// agents see in their skill list, so it must say something and stay short. Every other field
// is kept as written.
import { ID_PATTERN } from '@toolmesh/protocol';
import { parse } from 'yaml';
import { SkillPackageError } from './errors.ts';

export const MAX_DESCRIPTION_CHARS = 1024;

export interface SkillFrontMatter {
  name: string;
  description: string;
  /** Every field of the front matter, `name` and `description` included. */
  frontMatter: Record<string, unknown>;
}

const FENCE = /^---[ \t]*\r?\n([\s\S]*?)\r?\n(?:---|\.\.\.)[ \t]*(?:\r?\n|$)/;

function invalid(message: string, cause?: unknown): SkillPackageError {
  return new SkillPackageError('invalid_front_matter', message, { cause });
}

/** Parses and checks SKILL.md's front matter against the zip's root folder name. */
export function parseSkillMd(text: string, root: string): SkillFrontMatter {
  const match = FENCE.exec(text.startsWith('\uFEFF') ? text.slice(1) : text);
  if (match === null) {
    throw invalid('SKILL.md must start with YAML front matter between --- lines');
  }
  let data: unknown;
  try {
    // Aliases are capped (yaml's default is 100) so a billion-laughs document cannot expand.
    data = parse(match[1] ?? '', { maxAliasCount: 100, uniqueKeys: true });
  } catch (err) {
    throw invalid(`SKILL.md front matter is not valid YAML: ${(err as Error).message}`, err);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    throw invalid('SKILL.md front matter must be a YAML mapping (key: value lines)');
  }
  const frontMatter = data as Record<string, unknown>;

  const { name, description } = frontMatter;
  if (typeof name !== 'string' || name === '') {
    throw new SkillPackageError(
      'name_mismatch',
      `SKILL.md front matter has no name; it must be the root folder's name, ${JSON.stringify(root)}`,
      { details: { root } },
    );
  }
  if (!ID_PATTERN.test(name)) {
    throw new SkillPackageError(
      'invalid_name',
      `skill name ${JSON.stringify(name)} is invalid: use 1-64 characters of [A-Za-z0-9_-]`,
      { details: { name } },
    );
  }
  if (name !== root) {
    throw new SkillPackageError(
      'name_mismatch',
      `SKILL.md names the skill ${JSON.stringify(name)} but its folder is ${JSON.stringify(root)}`,
      { details: { name, root } },
    );
  }
  if (typeof description !== 'string' || description.trim() === '') {
    throw new SkillPackageError(
      'invalid_description',
      'SKILL.md front matter needs a non-empty description',
      { details: { name } },
    );
  }
  if (description.length > MAX_DESCRIPTION_CHARS) {
    throw new SkillPackageError(
      'invalid_description',
      `the description is ${description.length} characters; at most ${MAX_DESCRIPTION_CHARS} are allowed`,
      { details: { name, length: description.length } },
    );
  }
  return { name, description, frontMatter };
}
