// SKILL.md's YAML front matter: the block between a leading `---` line and the next `---` (or
// `...`) line, read as the open Agent Skills format (agentskills.io/specification) says:
// - `name`: 1-64 characters of lowercase letters, digits and single hyphens, not at either end,
//   equal to the skill's root folder;
// - `description`: 1-1024 characters, what agents see in their skill list;
// - optional `license` (a string), `compatibility` (at most 500 characters), `metadata` (a map of
//   strings to strings) and `allowed-tools` (space-separated tool names), read and kept;
// - any other field is kept as written and reported (`unknownFields`), not refused: skills
//   written for other tools carry their own keys.
import { parse } from 'yaml';
import { SkillPackageError } from './errors.ts';

export const MAX_DESCRIPTION_CHARS = 1024;
export const MAX_COMPATIBILITY_CHARS = 500;
/** The Agent Skills name: lowercase letters and digits, single hyphens between them. */
export const SKILL_NAME_PATTERN = /^(?=.{1,64}$)[a-z0-9]+(?:-[a-z0-9]+)*$/;
/** The fields the Agent Skills format defines. */
export const KNOWN_FIELDS = [
  'name',
  'description',
  'license',
  'compatibility',
  'metadata',
  'allowed-tools',
] as const;

export interface SkillFrontMatter {
  name: string;
  description: string;
  license?: string;
  compatibility?: string;
  metadata?: Record<string, string>;
  /** `allowed-tools`, split on spaces. */
  allowedTools?: string[];
  /** Fields the format does not define, kept in `frontMatter` and reported here. */
  unknownFields: string[];
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
  if (!SKILL_NAME_PATTERN.test(name)) {
    throw new SkillPackageError(
      'invalid_name',
      `skill name ${JSON.stringify(name).slice(0, 80)} is invalid: use 1-64 characters of lowercase letters, digits and single hyphens, not at the start or end (Agent Skills format)`,
      { details: { name: name.slice(0, 80) } },
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
  const out: SkillFrontMatter = {
    name,
    description,
    unknownFields: Object.keys(frontMatter).filter(
      (k) => !(KNOWN_FIELDS as readonly string[]).includes(k),
    ),
    frontMatter,
  };
  const field = (key: string, message: string) =>
    new SkillPackageError('invalid_front_matter', `SKILL.md front matter: ${key} ${message}`, {
      details: { name, field: key },
    });
  const { license, compatibility, metadata } = frontMatter;
  const allowed = frontMatter['allowed-tools'];
  if (license !== undefined) {
    if (typeof license !== 'string' || license.trim() === '') {
      throw field('license', 'must be a non-empty string (a license name or a bundled file)');
    }
    out.license = license;
  }
  if (compatibility !== undefined) {
    if (typeof compatibility !== 'string' || compatibility.trim() === '') {
      throw field('compatibility', 'must be a non-empty string');
    }
    if (compatibility.length > MAX_COMPATIBILITY_CHARS) {
      throw field(
        'compatibility',
        `is ${compatibility.length} characters; at most ${MAX_COMPATIBILITY_CHARS} are allowed`,
      );
    }
    out.compatibility = compatibility;
  }
  if (metadata !== undefined) {
    if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) {
      throw field('metadata', 'must be a mapping of strings to strings');
    }
    const bad = Object.entries(metadata).find(([, v]) => typeof v !== 'string');
    if (bad) throw field('metadata', `value of ${JSON.stringify(bad[0])} must be a string`);
    out.metadata = metadata as Record<string, string>;
  }
  if (allowed !== undefined) {
    if (typeof allowed !== 'string') {
      throw field('allowed-tools', 'must be a string of space-separated tool names');
    }
    out.allowedTools = allowed.split(/\s+/).filter((t) => t !== '');
  }
  return out;
}
