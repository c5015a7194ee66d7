// Turns one server.json entry into an MCP server of the project: a `remotes` entry into an http
// server, an npm `packages` entry (stdio) into a stdio server whose package the tools service
// installs. Declared headers and environment variables are filled from the request: `secrets`
// names the project secret each secret input takes (its value is read by the tools service at
// connect time, never here), `variables` gives plain values. A required input left without
// either is refused with every missing one listed. Everything refused is a 400 with a code.
import type { ImportedMcpServer, McpImportSource, McpSecretHeader } from '@toolmesh/store';
import { ApiError } from '../errors.ts';
import type {
  KeyValueInput,
  ServerJson,
  ServerJsonArgument,
  ServerJsonPackage,
  ServerJsonRemote,
} from './server-json.ts';

export interface ImportChoice {
  /** The server's name in the project (`<name>.<tool>`); default: from the entry's name. */
  name?: string | undefined;
  /** Declared input (env variable, header, placeholder) -> project secret. */
  secrets: Record<string, string>;
  /** Declared input -> plain value (not for inputs marked isSecret). */
  variables: Record<string, string>;
  /** Which transport to use when the entry has both; default: the first remote. */
  use?: 'remote' | 'package' | undefined;
  /** Which remote or package of that kind (0-based); default: the first usable one. */
  index?: number | undefined;
  catalog?: string | undefined;
}

export interface MissingInput {
  name: string;
  kind: 'environment_variable' | 'header' | 'argument' | 'variable';
  is_secret: boolean;
  description?: string;
}

export interface ImportPlan {
  server: ImportedMcpServer;
  /** The project secrets the server reads (they must exist). */
  secrets: string[];
  /** The inputs filled from a secret, by input name. */
  used_secrets: Record<string, string>;
  warnings: string[];
  /** What was chosen: `remote[0]`, `package[1]`. */
  chosen: { kind: 'remote' | 'package'; index: number; type: string };
}

/** Why an entry of the server.json cannot be imported; undefined when it can. */
export function unsupportedReason(p: ServerJsonPackage): string | undefined {
  if (p.registryType !== 'npm') {
    return `registryType ${JSON.stringify(p.registryType)} is not supported (only npm packages run in the sandbox)`;
  }
  if (p.transport.type !== 'stdio') {
    return `a package served over ${p.transport.type} is not supported: only stdio packages run in the sandbox`;
  }
  return undefined;
}

/** Transports an entry offers, as the catalog lists them. */
export function transportsOf(entry: ServerJson): string[] {
  return [
    ...(entry.remotes ?? []).map((r) => r.type),
    ...(entry.packages ?? []).map((p) => `${p.registryType}:${p.transport.type}`),
  ];
}

const NPM_NAME = /^(@[a-z0-9-~][a-z0-9-._~]*\/)?[a-z0-9-~][a-z0-9-._~]*$/;
/** An exact semver version: npm would take a range, the registry format forbids one. */
const EXACT_VERSION = /^\d+\.\d+\.\d+(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-.]+)?$/;
const PLACEHOLDER = /\{([A-Za-z0-9_.-]+)\}/g;
const RESERVED = new Set(['skills', 'builtin', 'sys']);
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;

const invalid = (message: string, details?: Record<string, unknown>) =>
  new ApiError('invalid_server_json', message, details);

/** The project name of a server: the part after the slash, mapped to an id. */
export function defaultServerName(entryName: string): string {
  const tail = entryName.slice(entryName.indexOf('/') + 1);
  return tail.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 64);
}

/** The inputs every chosen transport declares (what the catalog calls required variables). */
export function requiredInputsOf(entry: ServerJson): MissingInput[] {
  const out: MissingInput[] = [];
  const add = (kind: MissingInput['kind'], i: KeyValueInput) => {
    if (i.isRequired && i.value === undefined && i.default === undefined) {
      out.push({
        name: i.name,
        kind,
        is_secret: i.isSecret === true,
        ...(i.description ? { description: i.description } : {}),
      });
    }
  };
  for (const r of entry.remotes ?? []) for (const h of r.headers ?? []) add('header', h);
  for (const p of entry.packages ?? []) {
    for (const e of p.environmentVariables ?? []) add('environment_variable', e);
  }
  return out;
}

export function planImport(entry: ServerJson, choice: ImportChoice): ImportPlan {
  const name = choice.name ?? defaultServerName(entry.name);
  if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) {
    throw new ApiError(
      'invalid_request',
      `${JSON.stringify(name)} cannot be a server name: pass "name" (1-64 of [A-Za-z0-9_-])`,
    );
  }
  if (RESERVED.has(name)) {
    throw new ApiError('reserved_name', `${JSON.stringify(name)} is reserved; pass another "name"`);
  }
  const remotes = entry.remotes ?? [];
  const packages = entry.packages ?? [];
  if (remotes.length === 0 && packages.length === 0) {
    throw invalid(`${entry.name} has neither remotes nor packages: there is nothing to run`);
  }
  const ctx = new Inputs(choice);
  const source = {
    name: entry.name,
    version: entry.version,
    ...(choice.catalog ? { catalog: choice.catalog } : {}),
  };

  const use = choice.use ?? (remotes.length > 0 ? 'remote' : 'package');
  let plan: Omit<ImportPlan, 'secrets' | 'used_secrets' | 'warnings'>;
  if (use === 'remote') {
    const index = choice.index ?? 0;
    const remote = remotes[index];
    if (!remote) {
      throw new ApiError(
        'unsupported_server',
        remotes.length === 0
          ? `${entry.name} has no remotes; import its package instead ("use": "package")`
          : `${entry.name} has no remote at index ${index}`,
        { remotes: remotes.length },
      );
    }
    plan = {
      server: remoteServer(name, source, remote, ctx),
      chosen: { kind: 'remote', index, type: remote.type },
    };
  } else {
    const reasons = packages.map((p, i) => ({
      index: i,
      registry_type: p.registryType,
      transport: p.transport.type,
      reason: unsupportedReason(p),
    }));
    const index =
      choice.index ?? reasons.find((r) => r.reason === undefined)?.index ?? (packages[0] ? 0 : -1);
    const pkg = packages[index];
    if (!pkg) {
      throw new ApiError(
        'unsupported_server',
        packages.length === 0
          ? `${entry.name} has no packages; import its remote instead ("use": "remote")`
          : `${entry.name} has no package at index ${index}`,
        { packages: packages.length },
      );
    }
    const why = unsupportedReason(pkg);
    if (why) {
      throw new ApiError('unsupported_server', `${entry.name}: ${why}`, {
        packages: reasons.map((r) => ({ ...r, reason: r.reason ?? 'supported' })),
      });
    }
    plan = {
      server: packageServer(name, source, pkg, ctx),
      chosen: { kind: 'package', index, type: `npm:${pkg.transport.type}` },
    };
  }
  ctx.finish();
  return {
    ...plan,
    secrets: [...new Set(Object.values(ctx.usedSecrets))],
    used_secrets: ctx.usedSecrets,
    warnings: ctx.warnings,
  };
}

/** The values of declared inputs, from the request; records what is missing or unused. */
class Inputs {
  readonly missing: MissingInput[] = [];
  readonly warnings: string[] = [];
  readonly usedSecrets: Record<string, string> = {};
  readonly #used = new Set<string>();
  readonly choice: ImportChoice;
  constructor(choice: ImportChoice) {
    this.choice = choice;
    for (const [k, v] of Object.entries(choice.variables)) {
      if (k in choice.secrets) {
        throw new ApiError('invalid_request', `${k} is given both a secret and a variable`, {
          input: k,
        });
      }
      if (/[\r\n\0]/.test(v)) {
        throw new ApiError('invalid_request', `variable ${k} holds a line break or NUL`);
      }
    }
  }

  secretOf(name: string): string | undefined {
    const s = this.choice.secrets[name];
    if (s !== undefined) {
      this.#used.add(name);
      this.usedSecrets[name] = s;
    }
    return s;
  }

  /** A plain value for an input: the request's, else the declared value or default. */
  plainOf(
    name: string,
    input: {
      isSecret?: boolean | undefined;
      value?: string | undefined;
      default?: string | undefined;
    },
  ): string | undefined {
    const given = this.choice.variables[name];
    if (given !== undefined) {
      if (input.isSecret) {
        throw new ApiError(
          'invalid_request',
          `${name} is declared secret: map it to a project secret in "secrets", not "variables"`,
          { input: name },
        );
      }
      this.#used.add(name);
      return given;
    }
    return input.value ?? input.default;
  }

  miss(
    kind: MissingInput['kind'],
    name: string,
    input: { isSecret?: boolean | undefined; description?: string | undefined },
  ) {
    this.missing.push({
      name,
      kind,
      is_secret: input.isSecret === true,
      ...(input.description ? { description: input.description } : {}),
    });
  }

  /** Fills `{placeholders}` of a value with plain values; secrets are not allowed here. */
  fill(
    text: string,
    vars: Record<
      string,
      { isSecret?: boolean; value?: string; default?: string; description?: string }
    > = {},
    where: string,
  ): string {
    return text.replace(PLACEHOLDER, (whole, key: string) => {
      const declared = vars[key] ?? {};
      if (this.choice.secrets[key] !== undefined || declared.isSecret) {
        throw new ApiError(
          'unsupported_server',
          `${where} puts {${key}} into a value that cannot carry a secret; only environment variables and headers take secrets`,
          { input: key },
        );
      }
      const v = this.plainOf(key, declared);
      if (v === undefined) {
        this.miss('variable', key, declared);
        return whole;
      }
      return v;
    });
  }

  finish(): void {
    const unknown = [
      ...Object.keys(this.choice.secrets),
      ...Object.keys(this.choice.variables),
    ].filter((k) => !this.#used.has(k));
    if (unknown.length > 0) {
      throw new ApiError(
        'invalid_request',
        `the chosen transport declares no input named ${unknown.map((k) => JSON.stringify(k)).join(', ')}`,
        { unknown },
      );
    }
    if (this.missing.length > 0) {
      throw new ApiError(
        'missing_variables',
        `required inputs have no value: ${this.missing.map((m) => m.name).join(', ')}; map secret ones in "secrets" and give the others in "variables"`,
        { missing: this.missing },
      );
    }
  }
}

function checkUrl(raw: string): string {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw new ApiError('invalid_url', `${JSON.stringify(raw.slice(0, 200))} is not a URL`);
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') {
    throw new ApiError('invalid_url', `the remote URL must be http(s), got ${u.protocol}`);
  }
  if (raw.length > 2048)
    throw new ApiError('invalid_url', 'the remote URL is over 2048 characters');
  return raw;
}

function remoteServer(
  name: string,
  source: McpImportSource,
  remote: ServerJsonRemote,
  ctx: Inputs,
): ImportedMcpServer {
  const url = checkUrl(ctx.fill(remote.url, remote.variables, 'the remote URL'));
  const headers: Record<string, string> = {};
  const secretHeaders: Record<string, McpSecretHeader> = {};
  for (const h of remote.headers ?? []) {
    if (!HEADER_NAME.test(h.name))
      throw invalid(`header ${JSON.stringify(h.name)} is not a header name`);
    const whole = ctx.secretOf(h.name);
    if (whole !== undefined) {
      secretHeaders[h.name] = { secret: whole };
      continue;
    }
    const template = ctx.plainOf(h.name, h);
    if (template === undefined) {
      if (h.isRequired || h.isSecret) {
        if (h.isRequired) ctx.miss('header', h.name, h);
      }
      continue;
    }
    // Placeholders that take a secret make a template; the rest are filled now.
    const secrets: Record<string, string> = {};
    let missing = false;
    const text = template.replace(PLACEHOLDER, (whole2, key: string) => {
      const declared = h.variables?.[key] ?? {};
      const s = ctx.secretOf(key);
      if (s !== undefined) {
        secrets[key] = s;
        return whole2;
      }
      const v = ctx.plainOf(key, declared);
      if (v === undefined) {
        if (h.isRequired) ctx.miss('variable', key, declared);
        missing = true;
        return whole2;
      }
      return v;
    });
    if (missing) continue;
    if (/[\r\n\0]/.test(text)) throw invalid(`header ${h.name} holds a line break`);
    if (Object.keys(secrets).length > 0) secretHeaders[h.name] = { template: text, secrets };
    else headers[h.name] = text;
  }
  return {
    name,
    import_source: source,
    transport: 'http',
    url,
    headers,
    secret_headers: secretHeaders,
  };
}

function argsOf(list: readonly ServerJsonArgument[], ctx: Inputs): string[] {
  const out: string[] = [];
  for (const a of list) {
    const label = a.type === 'named' ? a.name : (a.valueHint ?? 'a positional argument');
    const key = a.type === 'named' ? a.name.replace(/^-+/, '') : (a.valueHint ?? '');
    if (ctx.choice.secrets[key] !== undefined || a.isSecret) {
      throw new ApiError(
        'unsupported_server',
        `argument ${label} is secret: secrets reach a stdio server only as environment variables (command lines are visible to every process)`,
        { argument: label },
      );
    }
    const raw = key ? ctx.plainOf(key, a) : (a.value ?? a.default);
    if (raw === undefined) {
      if (a.isRequired) ctx.miss('argument', key || label, a);
      continue;
    }
    const value = ctx.fill(raw, a.variables, `argument ${label}`);
    if (a.type === 'named') out.push(a.name, value);
    else out.push(value);
  }
  return out;
}

/** The public registry an entry names by default; the deployment's registry stands in for it. */
const PUBLIC_NPM = /^https:\/\/registry\.npmjs\.org\/?$/;

function packageServer(
  name: string,
  source: McpImportSource,
  pkg: ServerJsonPackage,
  ctx: Inputs,
): ImportedMcpServer {
  if (!NPM_NAME.test(pkg.identifier)) {
    throw invalid(`${JSON.stringify(pkg.identifier)} is not an npm package name`);
  }
  if (!EXACT_VERSION.test(pkg.version)) {
    throw invalid(
      `package version ${JSON.stringify(pkg.version)} must be one exact version (x.y.z), not a range or tag`,
    );
  }
  if (pkg.registryBaseUrl !== undefined && !PUBLIC_NPM.test(pkg.registryBaseUrl)) {
    // An entry cannot choose where the deployment downloads from: installs reach only the
    // operator's registry ([skills] npm_registry), which must serve this package.
    ctx.warnings.push(
      `registryBaseUrl ${pkg.registryBaseUrl} is not used: the package is installed from the deployment's npm registry ([skills] npm_registry)`,
    );
  }
  if ((pkg.runtimeArguments ?? []).length > 0) {
    ctx.warnings.push(
      'runtimeArguments are not used: the package is installed once and run with node, not through npx',
    );
  }
  const env: Record<string, string> = {};
  const secretEnv: Record<string, string> = {};
  for (const v of pkg.environmentVariables ?? []) {
    if (!ENV_NAME.test(v.name)) {
      throw invalid(`environment variable ${JSON.stringify(v.name)} is not a variable name`);
    }
    const s = ctx.secretOf(v.name);
    if (s !== undefined) {
      secretEnv[v.name] = s;
      continue;
    }
    const raw = ctx.plainOf(v.name, v);
    if (raw === undefined) {
      if (v.isRequired) ctx.miss('environment_variable', v.name, v);
      continue;
    }
    env[v.name] = ctx.fill(raw, v.variables, `environment variable ${v.name}`);
  }
  return {
    name,
    import_source: source,
    transport: 'stdio',
    command: 'node',
    args: argsOf(pkg.packageArguments ?? [], ctx),
    env,
    secret_env: secretEnv,
    package: { registry_type: 'npm', identifier: pkg.identifier, version: pkg.version },
  };
}
