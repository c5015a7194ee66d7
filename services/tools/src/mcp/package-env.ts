// The npm package an imported stdio MCP server runs (resource.mcp_servers.package), installed
// once per project, package version and sandbox provider, the way a skill's dependencies are
// (services/skills/src/skills/envs.ts): the durable build job in state.skill_envs, keyed by
// `mcp-npm:<identifier>` and the sha256 of `npm\0<identifier>\0<version>`. The first instance that
// needs it claims the row and installs in a sandbox of its own whose network reaches only
// `[skills] npm_registry` (`npm install --ignore-scripts`, so no install script of the package
// runs); everyone else, on any instance, waits on the row; a builder that died is taken over once
// its lease passes. The build's `env/` folder is then mounted read-only into the server's sandbox
// and the package's bin is run with node.
// e2b: every sandbox is a VM of its own, so the same install runs inside the server's sandbox,
// once per sandbox (a marker file).
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { ToolError } from '@toolmesh/protocol';
import type { ExecResult, Sandbox, SandboxProvider } from '@toolmesh/sandbox';
import type { McpServerPackage, SkillEnvKey, SkillEnvRecord, Store } from '@toolmesh/store';

export interface PackageEnvOptions {
  /** [skills] npm_registry: the only host an install may reach. */
  npmRegistry: string;
  buildTimeoutMs: number;
  leaseMs: number;
}

export interface PackageEnvDeps {
  store: Store;
  provider: SandboxProvider;
  instanceId: string;
  options: PackageEnvOptions;
  logger: Logger;
}

export interface PackageEnv {
  /** The file node runs, as the server's sandbox sees it. */
  entry: string;
  /** The folder mounted read-only into the server's sandbox (local). */
  location: string;
  builds: number;
}

const TAIL_BYTES = 8 * 1024;
const POLL_MS = 250;

// Fixed text: the package reaches it as environment variables, never spliced in.
const BUILD_SCRIPT = `set -eu
cd "$ENV_BUILD_DIR"
mkdir -p env/node
cp deps/package.json env/node/package.json
cd env/node
echo "== npm install $MCP_PACKAGE"
npm install --omit=dev --ignore-scripts --no-audit --no-fund --no-update-notifier --save-exact "$MCP_PACKAGE"
node ../../deps/entry.cjs "$MCP_PACKAGE_NAME" > ../entry
cd ../..
touch env/.ready
echo "== done"
`;

// Finds the file the package's bin runs: `bin` as a string, or the entry named like the package
// (its unscoped name), or the only entry. Printed relative to env/; a bin outside the package is
// refused.
const ENTRY_SCRIPT = `const fs = require('node:fs');
const path = require('node:path');
const name = process.argv[2];
const dir = path.join('node_modules', name);
const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
let bin = pkg.bin;
if (bin && typeof bin === 'object') {
  const keys = Object.keys(bin);
  const short = name.replace(/^@[^/]+\\//, '');
  bin = bin[short] !== undefined ? bin[short] : keys.length === 1 ? bin[keys[0]] : undefined;
}
if (typeof bin !== 'string') {
  console.error(name + ' declares no bin to run (package.json "bin")');
  process.exit(3);
}
const file = path.normalize(path.join(dir, bin));
if (!file.startsWith(dir + path.sep)) {
  console.error(name + ': its bin points outside the package');
  process.exit(3);
}
process.stdout.write(path.join('node', file));
`;

/** The row key of a package's environment in state.skill_envs. */
export function packageEnvKey(
  project: string,
  pkg: McpServerPackage,
  provider: 'local' | 'e2b',
): SkillEnvKey {
  return {
    projectId: project,
    skillName: `mcp-npm:${pkg.identifier}`,
    version: createHash('sha256')
      .update(`npm\u0000${pkg.identifier}\u0000${pkg.version}`)
      .digest('hex'),
    provider,
  };
}

function hostOf(url: string): string {
  const u = new URL(url);
  return u.port ? `${u.hostname}:${u.port}` : u.hostname;
}

function buildVars(o: PackageEnvOptions, dir: string, pkg: McpServerPackage) {
  return {
    ENV_BUILD_DIR: dir,
    MCP_PACKAGE: `${pkg.identifier}@${pkg.version}`,
    MCP_PACKAGE_NAME: pkg.identifier,
    npm_config_registry: o.npmRegistry,
    // The runtime's proxy carries every request; its default NO_PROXY would send a registry on
    // this host around the proxy into an empty network namespace.
    NO_PROXY: '',
    no_proxy: '',
  };
}

/** The installer's last output, with a credential of the registry URL masked. */
function tailOf(r: ExecResult, o: PackageEnvOptions): string {
  let text = `${r.stdout.text}${r.stderr.text ? `\n${r.stderr.text}` : ''}`;
  const password = new URL(o.npmRegistry).password;
  for (const s of [password, decodeURIComponent(password)]) {
    if (s.length > 0) text = text.split(s).join('****');
  }
  return text.length > TAIL_BYTES ? text.slice(text.length - TAIL_BYTES) : text;
}

async function putBuildFiles(sandbox: Sandbox, dir: string): Promise<void> {
  const at = (p: string) => (dir === '.' ? p : `${dir}/${p}`);
  await sandbox.putFile(at('deps/package.json'), '{ "private": true }\n');
  await sandbox.putFile(at('deps/entry.cjs'), ENTRY_SCRIPT);
}

function failure(pkg: McpServerPackage, row: Pick<SkillEnvRecord, 'output_tail' | 'error'>) {
  const message = row.error?.['message'];
  return new ToolError(
    `installing ${pkg.identifier}@${pkg.version} failed: ${typeof message === 'string' ? message : 'the installer failed'}`,
    {
      code: 'dependency_install_failed',
      details: {
        package: pkg.identifier,
        version: pkg.version,
        ...(row.error ?? {}),
        output_tail: row.output_tail,
      },
    },
  );
}

/** Checks the entry the build wrote: a path inside env/node/node_modules, nothing else. */
function checkedEntry(text: string, pkg: McpServerPackage): string {
  const entry = text.trim();
  if (
    !entry.startsWith('node/node_modules/') ||
    entry.split('/').some((s) => s === '..' || s === '.' || s === '') ||
    /[\0\n]/.test(entry)
  ) {
    throw new ToolError(`${pkg.identifier}@${pkg.version}: the installed bin path is not usable`, {
      code: 'dependency_install_failed',
      details: { package: pkg.identifier, version: pkg.version },
    });
  }
  return entry;
}

/**
 * Makes the package usable in the server's `sandbox` (installing it first when no one has) and
 * returns the file to run with node.
 */
export async function ensurePackageEnv(
  deps: PackageEnvDeps,
  sandbox: Sandbox,
  project: string,
  pkg: McpServerPackage,
  deadline: number,
): Promise<PackageEnv> {
  const key = packageEnvKey(project, pkg, deps.provider.kind);
  const log = deps.logger.child({
    component: 'mcp-package-env',
    project,
    package: pkg.identifier,
    version: pkg.version,
  });
  if (deps.provider.kind === 'e2b') return ensureInSandbox(deps, sandbox, key, pkg, deadline);
  const row = await readyRow(deps, key, pkg, deadline, log);
  const location = row.location!;
  if (!sandbox.grantRead) {
    throw new ToolError('this sandbox provider cannot mount an installed package', {
      code: 'unavailable',
    });
  }
  await sandbox.grantRead(location);
  const entry = checkedEntry(await readFile(`${location}/entry`, 'utf8'), pkg);
  return { entry: `${location}/${entry}`, location, builds: row.builds };
}

async function readyRow(
  deps: PackageEnvDeps,
  key: SkillEnvKey,
  pkg: McpServerPackage,
  deadline: number,
  log: Logger,
): Promise<SkillEnvRecord> {
  const envs = deps.store.skillEnvs;
  let seen = await envs.get(key);
  // Set once this request waited on someone else's build: that build's failure is the answer
  // (a failure from before it arrived is built again instead).
  let waited = false;
  for (;;) {
    if (seen?.status === 'ready') return seen;
    if (seen?.status === 'failed' && waited) throw failure(pkg, seen);
    if (seen === undefined || seen.status === 'failed' || seen.lease_until.getTime() < Date.now()) {
      const claimed = await envs.claim(key, ['node'], deps.instanceId, deps.options.leaseMs);
      if (claimed) return build(deps, key, pkg, claimed, log);
    }
    waited = true;
    if (Date.now() > deadline) {
      throw new ToolError(`${pkg.identifier}@${pkg.version} is still being installed`, {
        code: 'timeout',
        details: { package: pkg.identifier, version: pkg.version },
      });
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    seen = await envs.get(key);
  }
}

async function build(
  deps: PackageEnvDeps,
  key: SkillEnvKey,
  pkg: McpServerPackage,
  claimed: SkillEnvRecord,
  log: Logger,
): Promise<SkillEnvRecord> {
  const o = deps.options;
  const envs = deps.store.skillEnvs;
  log.info({ builds: claimed.builds }, 'installing an MCP server package');
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
    sandbox = await deps.provider.create({
      key: { project: key.projectId, agent: 'mcp-package', session: key.version.slice(0, 32) },
      network: { allowedDomains: [hostOf(o.npmRegistry)] },
    });
    const location = `${sandbox.workdir}/env`;
    await envs.setSandbox(key, deps.instanceId, sandbox.id, location);
    await putBuildFiles(sandbox, '.');
    const result = await sandbox.exec(
      { shell: BUILD_SCRIPT },
      {
        env: buildVars(o, '.', pkg),
        timeoutMs: o.buildTimeoutMs,
        limits: { stdoutBytes: TAIL_BYTES, stderrBytes: TAIL_BYTES },
      },
    );
    const ok = result.exitCode === 0 && !result.timedOut;
    const done = await envs.finish(key, deps.instanceId, {
      status: ok ? 'ready' : 'failed',
      outputTail: tailOf(result, o),
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
    if (!done) {
      throw new ToolError('the install of this package was taken over', { code: 'unavailable' });
    }
    log.info(
      { status: done.status, durationMs: Math.round(result.durationMs) },
      'MCP server package installed',
    );
    if (!ok) {
      await sandbox.destroy().catch((err: unknown) => log.warn({ err }, 'removing a failed build'));
      sandbox = undefined;
      throw failure(pkg, done);
    }
    await sandbox.close();
    return done;
  } catch (err) {
    // Unless finished above, a failure of our own (the provider refused a sandbox) is recorded.
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

/** e2b: installs into the server's own sandbox, once per sandbox. */
async function ensureInSandbox(
  deps: PackageEnvDeps,
  sandbox: Sandbox,
  key: SkillEnvKey,
  pkg: McpServerPackage,
  deadline: number,
): Promise<PackageEnv> {
  const dir = `.mcp-packages/${key.version.slice(0, 16)}`;
  const location = `${sandbox.workdir}/${dir}/env`;
  const ready = await sandbox.getFile(`${dir}/env/.ready`).then(
    () => true,
    () => false,
  );
  const envs = deps.store.skillEnvs;
  if (!ready) {
    // Rows record the last build; sandboxes do not wait on each other (each is its own VM).
    await envs.claim(key, ['node'], deps.instanceId, deps.options.leaseMs).catch(() => undefined);
    await putBuildFiles(sandbox, dir);
    const result = await sandbox.exec(
      { shell: BUILD_SCRIPT },
      {
        env: buildVars(deps.options, dir, pkg),
        timeoutMs: Math.max(1, Math.min(deps.options.buildTimeoutMs, deadline - Date.now())),
        limits: { stdoutBytes: TAIL_BYTES, stderrBytes: TAIL_BYTES },
      },
    );
    const ok = result.exitCode === 0 && !result.timedOut;
    const end = {
      status: ok ? ('ready' as const) : ('failed' as const),
      outputTail: tailOf(result, deps.options),
      error: ok
        ? null
        : {
            message: `the installer exited with ${result.exitCode ?? result.signal}`,
            exit_code: result.exitCode,
            timed_out: result.timedOut,
          },
    };
    await envs.finish(key, deps.instanceId, end).catch(() => undefined);
    if (!ok) throw failure(pkg, { output_tail: end.outputTail, error: end.error });
  }
  const entry = checkedEntry((await sandbox.getFile(`${dir}/env/entry`)).toString('utf8'), pkg);
  const row = await envs.get(key);
  return { entry: `${location}/${entry}`, location, builds: row?.builds ?? 1 };
}
