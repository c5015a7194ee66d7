// A skill's npm dependencies, checked the way npm reads a dependency spec (npm-package-arg):
// only registry specs pass (a version, a range, a dist-tag, or an `npm:` alias of one), since a
// build may fetch only from the configured registry. npm takes a spec with a scheme
// (`https:`, `git+ssh:`, `file:`, `github:`), a slash (`user/repo` is GitHub), a leading `.`,
// `~/` or `/` (a path), or a `.tgz`/`.tar.gz`/`.tar` ending (a tarball on disk) as something
// other than a registry package; all of those are refused here. A lockfile's `resolved` URLs
// are where npm fetches from, so each must be a tarball on the configured registry or on
// registry.npmjs.org (npm's replace-registry-host sends those to the configured registry);
// linked and non-registry entries are refused.
//
// The rest of the skill's package.json (scripts, overrides, optional and bundled dependencies)
// and any .npmrc in the skill never reach the build: it gets a package.json with `dependencies`
// alone, and runs npm with --ignore-scripts.

export class NpmSpecError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'NpmSpecError';
  }
}

// validate-npm-package-name's rules (old packages' upper case too): URL-safe, optional scope.
const PACKAGE_NAME = /^(?:@[a-z0-9~-][a-z0-9._~-]*\/)?[a-z0-9~-][a-z0-9._~-]*$/i;
// A semver range or a dist-tag: none of these characters makes npm read a path, URL or git.
const REGISTRY_SPEC = /^[A-Za-z0-9 .*^~<>=|_+-]*$/;
const FILE_TYPE = /\.(?:tgz|tar\.gz|tar)$/i;

/** True for a name npm would install from the registry under. */
export function isPackageName(name: string): boolean {
  return name.length <= 214 && PACKAGE_NAME.test(name);
}

/** Refuses a spec npm would fetch from anywhere but the registry; returns it unchanged. */
export function checkNpmSpec(name: string, spec: string): string {
  if (!isPackageName(name)) throw new NpmSpecError(`${JSON.stringify(name)} is not a package name`);
  let range = spec.trim();
  const alias = /^npm:/i.exec(range);
  if (alias) {
    // npm:<name>[@<range>]: the alias's own spec must be a registry one too.
    const rest = range.slice(alias[0].length);
    const at = rest.indexOf('@', 1);
    const target = at === -1 ? rest : rest.slice(0, at);
    if (!isPackageName(target)) {
      throw new NpmSpecError(`${name}: the alias ${JSON.stringify(spec)} does not name a package`);
    }
    range = at === -1 ? '' : rest.slice(at + 1);
    if (/^npm:/i.test(range)) throw new NpmSpecError(`${name}: an alias of an alias`);
  }
  if (!REGISTRY_SPEC.test(range) || range.startsWith('.') || FILE_TYPE.test(range)) {
    throw new NpmSpecError(
      `${name}: ${JSON.stringify(spec)} is not a registry version: URLs, git, GitHub shorthands, file: paths and tarballs are refused (dependencies come only from the configured registry)`,
    );
  }
  return spec;
}

const LOCK_PATH = /^(?:node_modules\/(?:@[^/]+\/)?[^/]+\/?)+$/;

function checkResolved(where: string, resolved: unknown, registries: readonly URL[]): void {
  if (resolved === undefined) return;
  if (typeof resolved !== 'string') {
    throw new NpmSpecError(`package-lock.json ${where}: resolved is not a string`);
  }
  let url: URL;
  try {
    url = new URL(resolved);
  } catch {
    throw new NpmSpecError(`package-lock.json ${where}: resolved is not a URL`);
  }
  const ok = registries.some(
    (r) => r.protocol === url.protocol && r.host === url.host && url.pathname.endsWith('.tgz'),
  );
  if (!ok || url.username || url.password) {
    throw new NpmSpecError(
      `package-lock.json ${where}: resolved ${JSON.stringify(resolved)} is not a tarball on the configured registry`,
    );
  }
}

function checkLockEntry(where: string, entry: unknown, registries: readonly URL[]): void {
  if (typeof entry !== 'object' || entry === null) {
    throw new NpmSpecError(`package-lock.json ${where}: not an object`);
  }
  const e = entry as Record<string, unknown>;
  if (e['link'] === true) throw new NpmSpecError(`package-lock.json ${where}: a linked folder`);
  const version = e['version'];
  if (version !== undefined && (typeof version !== 'string' || !REGISTRY_SPEC.test(version))) {
    throw new NpmSpecError(
      `package-lock.json ${where}: version ${JSON.stringify(version)} is not a registry version`,
    );
  }
  checkResolved(where, e['resolved'], registries);
  // What the package itself asks for: a spec npm would fetch elsewhere when the lock has no
  // entry for it.
  const v1 = where.startsWith('dependencies');
  for (const field of v1
    ? ['requires']
    : ['dependencies', 'optionalDependencies', 'peerDependencies']) {
    const specs = e[field];
    if (specs === undefined) continue;
    if (typeof specs !== 'object' || specs === null) {
      throw new NpmSpecError(`package-lock.json ${where}: ${field} is not an object`);
    }
    for (const [name, spec] of Object.entries(specs as Record<string, unknown>)) {
      try {
        if (typeof spec !== 'string') throw new NpmSpecError(`${name}: the spec is not a string`);
        checkNpmSpec(name, spec);
      } catch (err) {
        throw new NpmSpecError(`package-lock.json ${where}: ${(err as Error).message}`);
      }
    }
  }
  // lockfileVersion 1 (and 2's copy of it) nests the entries themselves under dependencies.
  if (v1 && e['dependencies'] !== undefined) checkLockTree(where, e['dependencies'], registries);
}

function checkLockTree(where: string, tree: unknown, registries: readonly URL[]): void {
  if (typeof tree !== 'object' || tree === null) {
    throw new NpmSpecError(`package-lock.json ${where}: not an object`);
  }
  for (const [name, entry] of Object.entries(tree)) {
    checkLockEntry(`${where} > ${name}`, entry, registries);
  }
}

/**
 * Refuses a lockfile that would make npm fetch from anywhere but `registry` (or
 * registry.npmjs.org, which npm rewrites to it).
 */
export function checkLockfile(text: string, registry: string): void {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new NpmSpecError(`package-lock.json is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof doc !== 'object' || doc === null)
    throw new NpmSpecError('package-lock.json is not an object');
  const registries = [new URL(registry), new URL('https://registry.npmjs.org/')];
  const lock = doc as Record<string, unknown>;
  const packages = lock['packages'];
  if (packages !== undefined) {
    if (typeof packages !== 'object' || packages === null) {
      throw new NpmSpecError('package-lock.json packages: not an object');
    }
    for (const [path, entry] of Object.entries(packages)) {
      if (path === '') continue; // the root: package.json, which is checked on its own
      if (!LOCK_PATH.test(path)) {
        throw new NpmSpecError(
          `package-lock.json packages: ${JSON.stringify(path)} is a local folder`,
        );
      }
      checkLockEntry(`packages > ${path}`, entry, registries);
    }
  }
  if (lock['dependencies'] !== undefined)
    checkLockTree('dependencies', lock['dependencies'], registries);
}
