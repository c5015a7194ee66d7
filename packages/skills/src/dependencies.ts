// What a skill needs installed before its commands run, read from its own files:
// `requirements.txt`, `pyproject.toml` ([project].dependencies) and `package.json`
// (`dependencies`; dev dependencies are a skill author's, not its users'). Pure: the skills
// service builds the environment from what this returns. Options of requirements.txt that
// would point pip at another index are refused: a build may reach only the deployment's
// configured package indexes, and saying so here beats a network denial deep in pip's output.
import { parse as parseToml } from 'smol-toml';

export const DependencyKind = { python: 'python', node: 'node' } as const;
export type DependencyKind = (typeof DependencyKind)[keyof typeof DependencyKind];

export interface SkillDependencies {
  /** Requirement lines for pip (requirements.txt as written, then pyproject's dependencies). */
  readonly python?: { readonly requirements: string; readonly sources: readonly string[] };
  /** package.json reduced to its dependencies, and its lockfile when the skill carries one. */
  readonly node?: { readonly packageJson: string; readonly lockfile?: string };
}

export class SkillDependencyError extends Error {
  readonly code = 'invalid_dependencies';
  readonly details: Record<string, unknown>;
  constructor(message: string, details: Record<string, unknown>) {
    super(message);
    this.name = 'SkillDependencyError';
    this.details = details;
  }
}

/** pip options that would change where packages come from. */
const INDEX_OPTIONS =
  /^(-i|--index-url|--extra-index-url|-f|--find-links|--trusted-host|--no-index)\b/;

function requirementLines(text: string, file: string): string[] {
  const lines: string[] = [];
  for (const raw of text.split(/\r?\n/)) {
    const line = raw.replace(/(^|\s)#.*$/, '').trim();
    if (line === '') continue;
    if (INDEX_OPTIONS.test(line)) {
      throw new SkillDependencyError(
        `${file} sets a package index (${line.split(/\s/)[0]}): dependencies come only from the deployment's configured indexes`,
        { file, line },
      );
    }
    lines.push(line);
  }
  return lines;
}

function pyprojectDependencies(text: string): string[] {
  let doc: Record<string, unknown>;
  try {
    doc = parseToml(text);
  } catch (err) {
    throw new SkillDependencyError(`pyproject.toml is not valid TOML: ${(err as Error).message}`, {
      file: 'pyproject.toml',
    });
  }
  const project = doc['project'];
  if (project === undefined) return [];
  const deps = (project as Record<string, unknown>)['dependencies'];
  if (deps === undefined) return [];
  if (!Array.isArray(deps) || deps.some((d) => typeof d !== 'string')) {
    throw new SkillDependencyError(
      'pyproject.toml [project].dependencies must be an array of strings',
      {
        file: 'pyproject.toml',
      },
    );
  }
  return (deps as string[]).map((d) => d.trim()).filter((d) => d !== '');
}

function nodeDependencies(text: string): Record<string, string> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new SkillDependencyError(`package.json is not valid JSON: ${(err as Error).message}`, {
      file: 'package.json',
    });
  }
  const deps = (doc as { dependencies?: unknown } | null)?.dependencies;
  if (deps === undefined) return {};
  if (
    typeof deps !== 'object' ||
    deps === null ||
    Array.isArray(deps) ||
    Object.values(deps).some((v) => typeof v !== 'string')
  ) {
    throw new SkillDependencyError(
      'package.json `dependencies` must map names to version strings',
      {
        file: 'package.json',
      },
    );
  }
  return deps as Record<string, string>;
}

/** The skill's dependencies, from its files at the skill's root; empty when it has none. */
export function skillDependencies(
  files: readonly { readonly path: string; readonly data: Buffer }[],
): SkillDependencies {
  const text = (name: string) => files.find((f) => f.path === name)?.data.toString('utf8');
  const requirements = text('requirements.txt');
  const pyproject = text('pyproject.toml');
  const packageJson = text('package.json');
  const lines: string[] = [];
  const sources: string[] = [];
  if (requirements !== undefined) {
    const found = requirementLines(requirements, 'requirements.txt');
    if (found.length > 0) sources.push('requirements.txt');
    lines.push(...found);
  }
  if (pyproject !== undefined) {
    const found = pyprojectDependencies(pyproject);
    if (found.length > 0) sources.push('pyproject.toml');
    lines.push(...found);
  }
  let node: SkillDependencies['node'];
  if (packageJson !== undefined) {
    const deps = nodeDependencies(packageJson);
    if (Object.keys(deps).length > 0) {
      const lockfile = text('package-lock.json');
      node = {
        packageJson: JSON.stringify({ name: 'skill-env', private: true, dependencies: deps }),
        ...(lockfile === undefined ? {} : { lockfile }),
      };
    }
  }
  return {
    ...(lines.length > 0 ? { python: { requirements: `${lines.join('\n')}\n`, sources } } : {}),
    ...(node ? { node } : {}),
  };
}

/** The kinds of environment a skill needs, in a fixed order. */
export function dependencyKinds(deps: SkillDependencies): DependencyKind[] {
  return [
    ...(deps.python ? [DependencyKind.python] : []),
    ...(deps.node ? [DependencyKind.node] : []),
  ];
}
