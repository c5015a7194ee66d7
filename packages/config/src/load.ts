// Loads the configuration once per process: the TOML file, then environment overrides, then one
// validation against the schema. Every problem found is reported together, each naming the line
// or variable it came from. The environment is a parameter; nothing here reads process.env.
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { isAbsolute, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseToml, TomlError } from 'smol-toml';
import type { z } from 'zod';
import { applyEnvOverrides, type Env } from './env.ts';
import { ConfigError, type ConfigIssue } from './errors.ts';
import { locateKeys, type KeyLines } from './locate.ts';
import { configDefaults, configSchema, type Config } from './schema.ts';
import { redactUrls } from './redact.ts';

export interface LoadConfigOptions {
  /** The TOML file; defaults to `CG_CONFIG` from `env`, then `config.toml` at the repo root. */
  path?: string;
  /** The TOML text itself; `path` then only names it in messages. */
  source?: string;
  env: Env;
}

const ROOT_CONFIG = fileURLToPath(new URL('../../../config.toml', import.meta.url));

export function loadConfig(options: LoadConfigOptions): Config {
  const { env } = options;
  // `CG_CONFIG=` (empty) means unset, not a file with no name.
  const file = options.path ?? (env['CG_CONFIG'] || undefined) ?? ROOT_CONFIG;
  const name = displayName(file);
  const source = options.source ?? readSource(file, name);
  const table = parseSource(source, name);

  const overrides = applyEnvOverrides(table, env, configDefaults);
  const parsed = configSchema.safeParse(overrides.table);
  const lines = locateKeys(source);
  const located = parsed.success
    ? []
    : parsed.error.issues.flatMap((issue) => describe(issue, name, lines, overrides.origins));
  // Schema issues come in schema order; file order is the one a reader fixes them in.
  located.sort((a, b) => a.order - b.order);
  const issues = [...located.map(({ issue }) => issue), ...overrides.issues];
  if (!parsed.success || issues.length > 0) throw new ConfigError(issues);

  const config = parsed.data;
  if (config.service.instance_id === '') {
    config.service.instance_id = defaultInstanceId();
  }
  return config;
}

/** Paths under the working directory are shown relative to it, as a user would type them. */
function displayName(file: string): string {
  const rel = relative(process.cwd(), resolve(file));
  return rel && !rel.startsWith('..') && !isAbsolute(rel) ? rel : file;
}

function readSource(file: string, name: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch (cause) {
    const reason = (cause as NodeJS.ErrnoException).code ?? (cause as Error).message;
    throw new ConfigError(
      [{ source: name, key: '', message: `cannot read the file (${reason})` }],
      { cause },
    );
  }
}

function parseSource(source: string, name: string): Record<string, unknown> {
  try {
    return parseToml(source);
  } catch (cause) {
    if (!(cause instanceof TomlError)) throw cause;
    // smol-toml's message carries a code frame after the first line; the line number says enough.
    const reason = cause.message.split('\n')[0]?.replace(/^Invalid TOML document: /, '') ?? '';
    throw new ConfigError(
      [{ source: `${name}:${cause.line}`, key: '', message: `invalid TOML: ${reason}` }],
      {
        cause,
      },
    );
  }
}

function describe(
  issue: z.core.$ZodIssue,
  name: string,
  lines: KeyLines,
  origins: ReadonlyMap<string, string>,
): { issue: ConfigIssue; order: number }[] {
  const base = issue.path.map(String);
  // One unknown-keys issue covers every stray key of a table; each gets its own line.
  const found =
    issue.code === 'unrecognized_keys'
      ? issue.keys.map((key) => ({
          path: [...base, key],
          message: base.length === 0 ? 'unknown section' : 'unknown key',
        }))
      : [{ path: base, message: issue.message }];
  return found.map(({ path, message: raw }) => {
    const key = path.join('.');
    const message = withoutSecrets(key, raw);
    // A variable sets a whole key: an issue inside its value (an array's item) is still its.
    const variable = origins.get(path.slice(0, 2).join('.'));
    if (variable !== undefined) {
      return { issue: { source: `env ${variable}`, key, message }, order: Number.MAX_SAFE_INTEGER };
    }
    const line = lines.lineOf(path);
    const source = line === undefined ? name : `${name}:${line}`;
    return { issue: { source, key, message }, order: line ?? 0 };
  });
}

const SECRET_NAME = /key|secret|token|password/i;

/**
 * A message about a secret key never shows the value (`got "..."` becomes its length); one about
 * a URL shows it with its credentials masked, or not at all when it holds an `@` but is too
 * malformed to tell where its password is.
 */
function withoutSecrets(key: string, message: string): string {
  const name = key.slice(key.lastIndexOf('.') + 1);
  const got = /, got (.*)$/s.exec(message);
  if (!got) return message;
  const shown = got[1]!;
  // Only a quoted string can hold a secret; `""` says what is wrong and nothing more.
  if (!shown.startsWith('"') || shown === '""') return message;
  const head = message.slice(0, got.index);
  if (SECRET_NAME.test(name)) {
    return `${head}, got a string that is not shown (a secret)`;
  }
  if (/url/i.test(name)) {
    const masked = redactUrls(shown);
    if (masked === shown && shown.includes('@'))
      return `${head}, got a value not shown (it may hold a password)`;
    return `${head}, got ${masked}`;
  }
  return message;
}

/** `host-1234`, reduced to the id alphabet: a hostname may hold dots, which NATS names reject. */
function defaultInstanceId(): string {
  const host = hostname().replace(/[^A-Za-z0-9_-]/g, '-');
  return `${host}-${process.pid}`.slice(-64);
}
