// Skill environments: a skill version's dependencies, installed once per version and sandbox
// provider, then used by every session that places that version.
//
// local: the first request claims the build in Postgres (state.skill_envs) and installs into a
// sandbox of its own that may reach only the configured package indexes: a venv
// (requirements.txt, pyproject.toml) and/or node_modules (package.json). That sandbox is kept;
// its `env/` folder is granted read-only to each session sandbox that places the version, at
// the same path (a venv is not relocatable). Any other request, on any instance, waits on the
// row instead of building again; a builder that dies stops renewing its lease and the next
// request takes the build over.
// e2b: a sandbox is a VM of its own, so the same script runs inside the session's sandbox, once
// per sandbox (a marker file), and the row records the last build's outcome.
import { ToolError } from '@toolmesh/protocol';
import { SANDBOX_PATH, type Sandbox } from '@toolmesh/sandbox';
import {
  dependencyKinds,
  SkillDependencyError,
  skillDependencies,
  type SkillDependencies,
} from '@toolmesh/skills';
import type { SkillEnvKey, SkillEnvRecord, SkillsStore } from '@toolmesh/store';
import {
  buildEnvInSandbox,
  hostOf,
  readyEnvRow,
  urlSecrets,
  type EnvBuildDeps,
  type EnvBuildJob,
} from '@toolmesh/tool-service';
import type { SkillsDeps } from './deps.ts';

export interface EnvOptions {
  /** pip's index URL first, extra index URLs after. */
  pythonIndexes: readonly string[];
  npmRegistry: string;
  /** More hosts a build may reach (where the indexes serve files from). */
  downloadHosts: readonly string[];
  buildTimeoutMs: number;
  leaseMs: number;
}

/** What a placed skill's environment is, as results show it. */
export interface EnvView {
  status: 'ready';
  kinds: string[];
  /** Where the environment is, as commands in the sandbox see it. */
  location: string;
  /** How many times this version's environment was built (1 unless a build failed or died). */
  builds: number;
  /** Variables every command of the skill gets (VIRTUAL_ENV, PATH, NODE_PATH). */
  vars: Record<string, string>;
}

/** The workdir-relative folder an e2b sandbox installs a skill's environment into. */
const e2bLocation = (name: string, version: string) =>
  `.skill-envs/${name}-${version.slice(0, 16)}`;

// Fixed text: every value reaches it as an environment variable or a file, never spliced in.
const BUILD_SCRIPT = `set -eu
cd "$ENV_BUILD_DIR"
if [ -f deps/requirements.txt ]; then
  echo "== python: creating the venv"
  python3 -m venv env/venv
  echo "== python: pip install -r requirements.txt"
  env/venv/bin/pip install --no-input --disable-pip-version-check --no-cache-dir -r deps/requirements.txt
fi
if [ -f deps/package.json ]; then
  echo "== node: npm install"
  mkdir -p env/node
  cp deps/package.json env/node/package.json
  if [ -f deps/package-lock.json ]; then cp deps/package-lock.json env/node/package-lock.json; fi
  cd env/node
  npm install --omit=dev --ignore-scripts --no-audit --no-fund --no-update-notifier
  cd - >/dev/null
fi
touch env/.ready
echo "== done"
`;

/** Hosts a build may reach: the indexes', the registry's and the download hosts. */
export function buildHosts(o: EnvOptions, deps: SkillDependencies): string[] {
  const hosts = new Set<string>();
  if (deps.python) for (const url of o.pythonIndexes) hosts.add(hostOf(url));
  if (deps.node) hosts.add(hostOf(o.npmRegistry));
  if (deps.python) for (const h of o.downloadHosts) hosts.add(h);
  return [...hosts];
}

function buildVars(o: EnvOptions, dir: string): Record<string, string> {
  const [index, ...extra] = o.pythonIndexes;
  return {
    ENV_BUILD_DIR: dir,
    ...(index === undefined ? {} : { PIP_INDEX_URL: index }),
    ...(extra.length > 0 ? { PIP_EXTRA_INDEX_URL: extra.join(' ') } : {}),
    npm_config_registry: o.npmRegistry,
    // The runtime's proxy carries every request; its default NO_PROXY would send an index on
    // this host (a test's, a mirror's) around the proxy into an empty network namespace.
    NO_PROXY: '',
    no_proxy: '',
  };
}

/** The variables a command of the skill gets for an environment at `location`. */
function envVars(kinds: readonly string[], location: string): Record<string, string> {
  const path: string[] = [];
  const vars: Record<string, string> = {};
  if (kinds.includes('python')) {
    vars['VIRTUAL_ENV'] = `${location}/venv`;
    path.push(`${location}/venv/bin`);
  }
  if (kinds.includes('node')) {
    vars['NODE_PATH'] = `${location}/node/node_modules`;
    path.push(`${location}/node/node_modules/.bin`);
  }
  vars['PATH'] = [...path, SANDBOX_PATH].join(':');
  return vars;
}

async function putDeps(sandbox: Sandbox, dir: string, deps: SkillDependencies): Promise<void> {
  const at = (p: string) => (dir === '.' ? p : `${dir}/${p}`);
  if (deps.python) await sandbox.putFile(at('deps/requirements.txt'), deps.python.requirements);
  if (deps.node) {
    await sandbox.putFile(at('deps/package.json'), deps.node.packageJson);
    if (deps.node.lockfile) await sandbox.putFile(at('deps/package-lock.json'), deps.node.lockfile);
  }
}

function failure(
  skill: string,
  version: string,
  row: Pick<SkillEnvRecord, 'output_tail' | 'error'>,
) {
  const message = row.error?.['message'];
  return new ToolError(
    `installing the dependencies of skill ${skill} failed: ${typeof message === 'string' ? message : 'the installer failed'}`,
    {
      code: 'dependency_install_failed',
      details: { skill, version, ...(row.error ?? {}), output_tail: row.output_tail },
    },
  );
}

export interface EnvRequest {
  project: string;
  skill: string;
  version: string;
  files: readonly { readonly path: string; readonly data: Buffer }[];
  signal: AbortSignal;
  deadline: number;
}

/** The skill's dependencies, or a clear failure when its files cannot be used. */
export function dependenciesOf(
  req: Pick<EnvRequest, 'skill' | 'version' | 'files'>,
  o: Pick<EnvOptions, 'npmRegistry'>,
) {
  try {
    return skillDependencies(req.files, { npmRegistry: o.npmRegistry });
  } catch (err) {
    if (err instanceof SkillDependencyError) {
      throw new ToolError(`skill ${req.skill}: ${err.message}`, {
        code: 'invalid_dependencies',
        details: { skill: req.skill, version: req.version, ...err.details },
      });
    }
    throw err;
  }
}

/**
 * Makes the skill's environment usable in `sandbox` (building it first when no one has) and
 * returns what commands need; undefined for a skill without dependencies.
 */
export async function ensureSkillEnv(
  deps: SkillsDeps<SkillsStore>,
  sandbox: Sandbox,
  req: EnvRequest,
): Promise<EnvView | undefined> {
  const wanted = dependenciesOf(req, deps.envs);
  const kinds = dependencyKinds(wanted);
  if (kinds.length === 0) return undefined;
  const key: SkillEnvKey = {
    projectId: req.project,
    skillName: req.skill,
    version: req.version,
    provider: deps.sandboxes.kind,
  };
  const o = deps.envs;
  const build: EnvBuildDeps = {
    envs: deps.store.skillEnvs,
    provider: deps.sandboxes,
    instanceId: deps.instanceId,
    buildTimeoutMs: o.buildTimeoutMs,
    leaseMs: o.leaseMs,
  };
  const job: EnvBuildJob = {
    key,
    kinds,
    agent: 'skill-env',
    hosts: buildHosts(o, wanted),
    script: BUILD_SCRIPT,
    vars: (dir) => buildVars(o, dir),
    putFiles: (sb, dir) => putDeps(sb, dir, wanted),
    secrets: urlSecrets([...o.pythonIndexes, o.npmRegistry]),
    failure: (row) => failure(req.skill, req.version, row),
    stillBuilding: () =>
      new ToolError(`the dependencies of skill ${req.skill} are still being installed`, {
        code: 'timeout',
        details: { skill: req.skill, version: req.version },
      }),
    takenOver: () =>
      new ToolError('the build of this skill environment was taken over', { code: 'unavailable' }),
    deadline: req.deadline,
    signal: req.signal,
    logger: deps.logger.child({ skill: req.skill, version: req.version, component: 'skill-env' }),
    log: {
      building: 'building a skill environment',
      buildingKinds: true,
      built: 'skill environment built',
      removeFailed: 'removing a failed build failed',
    },
  };
  if (deps.sandboxes.kind === 'e2b') {
    const dir = e2bLocation(req.skill, req.version);
    const location = `${sandbox.workdir}/${dir}/env`;
    await buildEnvInSandbox(build, job, sandbox, dir);
    const row = await deps.store.skillEnvs.get(key);
    return {
      status: 'ready',
      kinds,
      location,
      builds: row?.builds ?? 1,
      vars: envVars(kinds, location),
    };
  }
  const row = await readyEnvRow(build, job);
  const location = row.location!;
  if (!sandbox.grantRead) {
    throw new ToolError('this sandbox provider cannot mount a skill environment', {
      code: 'unavailable',
    });
  }
  await sandbox.grantRead(location);
  return {
    status: 'ready',
    kinds: row.kinds,
    location,
    builds: row.builds,
    vars: envVars(row.kinds, location),
  };
}

/** The environment's row as results and the api show it. */
export function envStatusOf(row: SkillEnvRecord | undefined, kinds: readonly string[]) {
  if (kinds.length === 0) return null;
  if (!row) return { status: 'not_built', kinds: [...kinds] };
  return {
    status: row.status,
    kinds: row.kinds,
    provider: row.provider,
    builds: row.builds,
    started_at: row.started_at.toISOString(),
    finished_at: row.finished_at?.toISOString() ?? null,
    ...(row.status === 'failed' ? { error: row.error, output_tail: row.output_tail } : {}),
  };
}
