// What a skill needs installed before its commands run, read from its own files:
// `requirements.txt`, `pyproject.toml` ([project].dependencies) and `package.json`
// (`dependencies`; dev dependencies are a skill author's, not its users'). Pure: the skills
// service builds the environment from what this returns. A build may fetch only from the
// deployment's configured indexes, so anything that would make pip or npm fetch elsewhere is
// refused here (pip-requirements.ts, npm-dependencies.ts), which beats a network denial deep in
// an installer's output; and pip gets requirements written back from what was checked, never
// the skill's own text.
import { parse as parseToml } from 'smol-toml';
import { checkLockfile, checkNpmSpec, NpmSpecError } from './npm-dependencies.ts';
import {
  canonicalRequirements,
  checkRequirement,
  decodeRequirements,
  RequirementError,
} from './pip-requirements.ts';

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

function requirementLines(data: Buffer): string[] {
  try {
    return canonicalRequirements(decodeRequirements(data));
  } catch (err) {
    if (!(err instanceof RequirementError)) throw err;
    const at = err.line === undefined ? '' : ` line ${err.line}`;
    throw new SkillDependencyError(`requirements.txt${at} ${err.message}`, {
      file: 'requirements.txt',
      ...(err.line === undefined ? {} : { line: err.line }),
    });
  }
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
  // Each one becomes a line of the requirements file pip reads, so it is checked as one.
  return (deps as string[]).flatMap((d, i) => {
    if (d.trim() === '') return [];
    try {
      return [checkRequirement(d)];
    } catch (err) {
      if (!(err instanceof RequirementError)) throw err;
      throw new SkillDependencyError(`pyproject.toml [project].dependencies[${i}] ${err.message}`, {
        file: 'pyproject.toml',
        index: i,
      });
    }
  });
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
  for (const [name, spec] of Object.entries(deps as Record<string, string>)) {
    try {
      checkNpmSpec(name, spec);
    } catch (err) {
      if (!(err instanceof NpmSpecError)) throw err;
      throw new SkillDependencyError(`package.json dependency ${err.message}`, {
        file: 'package.json',
        dependency: name,
      });
    }
  }
  return deps as Record<string, string>;
}

export interface DependencyOptions {
  /** The registry npm installs from: a lockfile may resolve to it (and to registry.npmjs.org). */
  readonly npmRegistry?: string;
}

/** The skill's dependencies, from its files at the skill's root; empty when it has none. */
export function skillDependencies(
  files: readonly { readonly path: string; readonly data: Buffer }[],
  opts: DependencyOptions = {},
): SkillDependencies {
  const text = (name: string) => files.find((f) => f.path === name)?.data.toString('utf8');
  const requirements = files.find((f) => f.path === 'requirements.txt')?.data;
  const pyproject = text('pyproject.toml');
  const packageJson = text('package.json');
  const lines: string[] = [];
  const sources: string[] = [];
  if (requirements !== undefined) {
    const found = requirementLines(requirements);
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
      if (lockfile !== undefined) {
        try {
          checkLockfile(lockfile, opts.npmRegistry ?? 'https://registry.npmjs.org/');
        } catch (err) {
          if (!(err instanceof NpmSpecError)) throw err;
          throw new SkillDependencyError(err.message, { file: 'package-lock.json' });
        }
      }
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
