// Environment overrides: `CG__SECTION__KEY=value` replaces `key` in `[section]`. Values arrive as
// text and are converted by the type of the key they target; anything that does not convert is
// passed on unchanged, so the schema rejects it with the same message a bad file value gets.
import type { ConfigIssue } from './errors.ts';

export const ENV_PREFIX = 'CG__';

export type Env = Readonly<Record<string, string | undefined>>;

export interface EnvOverrides {
  /** The file's table with the overrides applied; the input table is left untouched. */
  readonly table: Record<string, unknown>;
  /** Dotted key (`tools.concurrency`) to the variable that set it, for error messages. */
  readonly origins: ReadonlyMap<string, string>;
  readonly issues: readonly ConfigIssue[];
}

const NUMBER = /^[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

/**
 * `template` holds a value of the right type for every known key (the defaults); an unknown key
 * keeps its text and the strict schema reports it.
 */
export function applyEnvOverrides(
  table: Readonly<Record<string, unknown>>,
  env: Env,
  template: Readonly<Record<string, unknown>>,
): EnvOverrides {
  const result: Record<string, unknown> = { ...table };
  const origins = new Map<string, string>();
  const issues: ConfigIssue[] = [];

  for (const name of Object.keys(env).sort()) {
    const raw = env[name];
    if (!name.startsWith(ENV_PREFIX) || raw === undefined) continue;
    const parts = name.slice(ENV_PREFIX.length).split('__');
    const [section, key] = parts.map(snakeCase);
    if (parts.length !== 2 || !section || !key) {
      issues.push({
        source: `env ${name}`,
        key: '',
        message: `expected ${ENV_PREFIX}<SECTION>__<KEY>`,
      });
      continue;
    }
    const path = `${section}.${key}`;
    const earlier = origins.get(path);
    if (earlier !== undefined) {
      issues.push({ source: `env ${name}`, key: path, message: `also set by ${earlier}` });
      continue;
    }
    const current = result[section] ?? {};
    // A section the file made into something other than a table is reported by the schema.
    if (!isTable(current)) continue;
    const templateSection = template[section];
    const target = isTable(templateSection) ? templateSection[key] : undefined;
    result[section] = { ...current, [key]: convert(raw, target) };
    origins.set(path, name);
  }
  return { table: result, origins, issues };
}

/** `TOOLS`, `tools` and `Tools` all name `[tools]`; `maxTimeoutMs` names `max_timeout_ms`. */
function snakeCase(part: string): string {
  // Only a mixedCase part is split at its humps: an all-caps one (`E2B`, `API_KEY`) is already
  // snake case, and splitting `E2B` at its digit would name a section `e2_b`.
  if (!/[a-z]/.test(part)) return part.toLowerCase();
  return part.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}

function convert(raw: string, target: unknown): unknown {
  if (typeof target === 'number') return NUMBER.test(raw.trim()) ? Number(raw) : raw;
  if (typeof target === 'boolean') {
    const lower = raw.trim().toLowerCase();
    return lower === 'true' ? true : lower === 'false' ? false : raw;
  }
  if (Array.isArray(target)) {
    try {
      const parsed: unknown = JSON.parse(raw);
      return Array.isArray(parsed) ? parsed : raw;
    } catch {
      return raw;
    }
  }
  return raw;
}

function isTable(value: unknown): value is Record<string, unknown> {
  return (
    typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Date)
  );
}
