// The npm package an imported stdio MCP server runs (resource.mcp_servers.package), installed
// once per project, package version and sandbox provider, the way a skill's dependencies are
// (services/skills/src/skills/envs.ts): the durable build job of @toolmesh/tool-service
// (env-build.ts) on a state.skill_envs row keyed by `mcp-npm:<identifier>` and the sha256 of
// `npm\0<identifier>\0<version>`. The first instance that needs it claims the row and installs
// in a sandbox of its own whose network reaches only `[skills] npm_registry` (`npm install
// --ignore-scripts`, so no install script of the package runs); everyone else, on any instance,
// waits on the row; a builder that died is taken over once its lease passes. The build's `env/`
// folder is then mounted read-only into the server's sandbox and the package's bin is run with
// node.
// e2b: every sandbox is a VM of its own, so the same install runs inside the server's sandbox,
// once per sandbox (a marker file).
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import type { Logger } from 'pino';
import { ToolError } from '@toolmesh/protocol';
import type { Sandbox, SandboxProvider } from '@toolmesh/sandbox';
import type { McpServerPackage, SkillEnvKey, SkillEnvRecord, SkillsStore } from '@toolmesh/store';
import {
  buildEnvInSandbox,
  hostOf,
  readyEnvRow,
  urlSecrets,
  type EnvBuildDeps,
  type EnvBuildJob,
} from '@toolmesh/tool-service';

export interface PackageEnvOptions {
  /** [skills] npm_registry: the only host an install may reach. */
  npmRegistry: string;
  buildTimeoutMs: number;
  leaseMs: number;
}

export interface PackageEnvDeps {
  store: SkillsStore;
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
  process.stderr.write(name + ' declares no bin to run (package.json "bin")\\n');
  process.exit(3);
}
const file = path.normalize(path.join(dir, bin));
if (!file.startsWith(dir + path.sep)) {
  process.stderr.write(name + ': its bin points outside the package\\n');
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
  const o = deps.options;
  const build: EnvBuildDeps = {
    envs: deps.store.skillEnvs,
    provider: deps.provider,
    instanceId: deps.instanceId,
    buildTimeoutMs: o.buildTimeoutMs,
    leaseMs: o.leaseMs,
  };
  const job: EnvBuildJob = {
    key,
    kinds: ['node'],
    agent: 'mcp-package',
    hosts: [hostOf(o.npmRegistry)],
    script: BUILD_SCRIPT,
    vars: (dir) => buildVars(o, dir, pkg),
    putFiles: putBuildFiles,
    secrets: urlSecrets([o.npmRegistry]),
    failure: (row) => failure(pkg, row),
    stillBuilding: () =>
      new ToolError(`${pkg.identifier}@${pkg.version} is still being installed`, {
        code: 'timeout',
        details: { package: pkg.identifier, version: pkg.version },
      }),
    takenOver: () =>
      new ToolError('the install of this package was taken over', { code: 'unavailable' }),
    deadline,
    logger: deps.logger.child({
      component: 'mcp-package-env',
      project,
      package: pkg.identifier,
      version: pkg.version,
    }),
    log: {
      building: 'installing an MCP server package',
      built: 'MCP server package installed',
      removeFailed: 'removing a failed build',
    },
  };
  if (deps.provider.kind === 'e2b') {
    const dir = `.mcp-packages/${key.version.slice(0, 16)}`;
    const location = `${sandbox.workdir}/${dir}/env`;
    await buildEnvInSandbox(build, job, sandbox, dir);
    const entry = checkedEntry((await sandbox.getFile(`${dir}/env/entry`)).toString('utf8'), pkg);
    const row = await deps.store.skillEnvs.get(key);
    return { entry: `${location}/${entry}`, location, builds: row?.builds ?? 1 };
  }
  const row = await readyEnvRow(build, job);
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
