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
import { SANDBOX_PATH, type ExecResult, type Sandbox } from '@toolmesh/sandbox';
import {
  dependencyKinds,
  SkillDependencyError,
  skillDependencies,
  type SkillDependencies,
} from '@toolmesh/skills';
import type { SkillEnvKey, SkillEnvRecord } from '@toolmesh/store';
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

const TAIL_BYTES = 8 * 1024;
const POLL_MS = 250;
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

function hostOf(url: string): string {
  const u = new URL(url);
  return u.port ? `${u.hostname}:${u.port}` : u.hostname;
}

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

/** Credentials in the configured index URLs (a private mirror's user:token). */
function secretsOf(o: EnvOptions): string[] {
  const found: string[] = [];
  for (const url of [...o.pythonIndexes, o.npmRegistry]) {
    const u = new URL(url);
    for (const part of [u.password, decodeURIComponent(u.password)]) {
      if (part.length > 0) found.push(part);
    }
  }
  return found;
}

/** The installer's last output, with any index credential masked: it reaches cards and the api. */
function tailOf(r: ExecResult, o: EnvOptions): string {
  let text = `${r.stdout.text}${r.stderr.text ? `\n${r.stderr.text}` : ''}`;
  for (const secret of secretsOf(o)) text = text.split(secret).join('****');
  return text.length > TAIL_BYTES ? text.slice(text.length - TAIL_BYTES) : text;
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
export function dependenciesOf(req: Pick<EnvRequest, 'skill' | 'version' | 'files'>) {
  try {
    return skillDependencies(req.files);
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
  deps: SkillsDeps,
  sandbox: Sandbox,
  req: EnvRequest,
): Promise<EnvView | undefined> {
  const wanted = dependenciesOf(req);
  const kinds = dependencyKinds(wanted);
  if (kinds.length === 0) return undefined;
  const key: SkillEnvKey = {
    projectId: req.project,
    skillName: req.skill,
    version: req.version,
    provider: deps.sandboxes.kind,
  };
  if (deps.sandboxes.kind === 'e2b') return ensureInSandbox(deps, sandbox, req, key, wanted, kinds);
  const row = await readyRow(deps, req, key, wanted, kinds);
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

/** Waits for (or builds) the ready row of a local environment. */
async function readyRow(
  deps: SkillsDeps,
  req: EnvRequest,
  key: SkillEnvKey,
  wanted: SkillDependencies,
  kinds: string[],
): Promise<SkillEnvRecord> {
  const o = deps.envs;
  const log = deps.logger.child({ skill: req.skill, version: req.version, component: 'skill-env' });
  let seen = await deps.store.skillEnvs.get(key);
  // Set once this request has waited on someone else's build: that build's failure is then
  // this request's answer (a failure from before it arrived is built again instead).
  let waited = false;
  for (;;) {
    if (seen?.status === 'ready') return seen;
    if (seen?.status === 'failed' && waited) throw failure(req.skill, req.version, seen);
    if (seen === undefined || seen.status === 'failed' || seen.lease_until.getTime() < Date.now()) {
      const claimed = await deps.store.skillEnvs.claim(key, kinds, deps.instanceId, o.leaseMs);
      if (claimed) return build(deps, req, key, wanted, claimed, log);
    }
    waited = true;
    if (req.signal.aborted) throw req.signal.reason as Error;
    if (Date.now() > req.deadline) {
      throw new ToolError(`the dependencies of skill ${req.skill} are still being installed`, {
        code: 'timeout',
        details: { skill: req.skill, version: req.version },
      });
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    seen = await deps.store.skillEnvs.get(key);
  }
}

async function build(
  deps: SkillsDeps,
  req: EnvRequest,
  key: SkillEnvKey,
  wanted: SkillDependencies,
  claimed: SkillEnvRecord,
  log: SkillsDeps['logger'],
): Promise<SkillEnvRecord> {
  const o = deps.envs;
  const envs = deps.store.skillEnvs;
  log.info({ builds: claimed.builds, kinds: claimed.kinds }, 'building a skill environment');
  const renew = setInterval(
    () => {
      envs
        .renew(key, deps.instanceId, o.leaseMs)
        .catch((err: unknown) => log.warn({ err }, 'renewing a build lease failed'));
    },
    Math.max(500, Math.floor(o.leaseMs / 3)),
  );
  let sandbox: Sandbox | undefined;
  try {
    sandbox = await deps.sandboxes.create({
      key: { project: req.project, agent: 'skill-env', session: req.version.slice(0, 32) },
      network: { allowedDomains: buildHosts(o, wanted) },
    });
    const location = `${sandbox.workdir}/env`;
    await envs.setSandbox(key, deps.instanceId, sandbox.id, location);
    await putDeps(sandbox, '.', wanted);
    const result = await sandbox.exec(
      { shell: BUILD_SCRIPT },
      {
        env: buildVars(o, '.'),
        timeoutMs: o.buildTimeoutMs,
        limits: { stdoutBytes: TAIL_BYTES, stderrBytes: TAIL_BYTES },
      },
    );
    const ok = result.exitCode === 0 && !result.timedOut;
    const done = await envs.finish(key, deps.instanceId, {
      status: ok ? 'ready' : 'failed',
      outputTail: tailOf(result, deps.envs),
      error: ok
        ? null
        : {
            message: result.timedOut
              ? `the installer ran past ${o.buildTimeoutMs} ms`
              : `the installer exited with ${result.exitCode ?? result.signal}`,
            exit_code: result.exitCode,
            timed_out: result.timedOut,
          },
    });
    if (!done)
      throw new ToolError('the build of this skill environment was taken over', {
        code: 'unavailable',
      });
    log.info(
      { status: done.status, durationMs: Math.round(result.durationMs) },
      'skill environment built',
    );
    if (!ok) {
      await sandbox
        .destroy()
        .catch((err: unknown) => log.warn({ err }, 'removing a failed build failed'));
      sandbox = undefined;
      throw failure(req.skill, req.version, done);
    }
    await sandbox.close();
    return done;
  } catch (err) {
    // The row stays `building` until its lease passes unless it was finished above; a failure
    // of our own before the install (the provider refused a sandbox) is recorded now.
    const row = await envs.get(key).catch(() => undefined);
    if (row?.status === 'building' && row.owner_instance === deps.instanceId) {
      await envs
        .finish(key, deps.instanceId, {
          status: 'failed',
          outputTail: '',
          error: { message: err instanceof Error ? err.message : String(err) },
        })
        .catch(() => undefined);
      await sandbox?.destroy().catch(() => undefined);
    }
    throw err;
  } finally {
    clearInterval(renew);
  }
}

/** e2b: installs into the session's own sandbox, once per sandbox. */
async function ensureInSandbox(
  deps: SkillsDeps,
  sandbox: Sandbox,
  req: EnvRequest,
  key: SkillEnvKey,
  wanted: SkillDependencies,
  kinds: string[],
): Promise<EnvView> {
  const dir = e2bLocation(req.skill, req.version);
  const location = `${sandbox.workdir}/${dir}/env`;
  const ready = await sandbox.getFile(`${dir}/env/.ready`).then(
    () => true,
    () => false,
  );
  const envs = deps.store.skillEnvs;
  if (!ready) {
    // Rows record the last build; sandboxes do not wait on each other (each is its own VM).
    await envs.claim(key, kinds, deps.instanceId, deps.envs.leaseMs).catch(() => undefined);
    await putDeps(sandbox, dir, wanted);
    const result = await sandbox.exec(
      { shell: BUILD_SCRIPT },
      {
        env: buildVars(deps.envs, dir),
        timeoutMs: Math.max(1, Math.min(deps.envs.buildTimeoutMs, req.deadline - Date.now())),
        signal: req.signal,
        limits: { stdoutBytes: TAIL_BYTES, stderrBytes: TAIL_BYTES },
      },
    );
    const ok = result.exitCode === 0 && !result.timedOut;
    const end = {
      status: ok ? ('ready' as const) : ('failed' as const),
      outputTail: tailOf(result, deps.envs),
      error: ok
        ? null
        : {
            message: `the installer exited with ${result.exitCode ?? result.signal}`,
            exit_code: result.exitCode,
            timed_out: result.timedOut,
          },
    };
    await envs.finish(key, deps.instanceId, end).catch(() => undefined);
    if (!ok)
      throw failure(req.skill, req.version, { output_tail: end.outputTail, error: end.error });
  }
  const row = await envs.get(key);
  return {
    status: 'ready',
    kinds,
    location,
    builds: row?.builds ?? 1,
    vars: envVars(kinds, location),
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
