// Compiling the JSON Schemas tenants write (tool parameters) without letting one tenant stall
// a process or change another tenant's validation:
// - every regex runs on RE2 (linear time), see regexp.ts, and `uniqueItems` is checked in
//   linear time, see unique.ts; patterns are bounded in compiled size, per pattern and per
//   schema (at registration), since RE2's time is input length times pattern size;
// - a schema whose `$ref`s multiply (2^n evaluations per value) is refused, see expansion.ts;
// - ajv keeps ids it has seen (`$id` of nested subschemas even with `addUsedSchema: false`) in
//   its instance-wide `refs`, so one ajv instance per project: a `$id` or `$ref` in one project's
//   schema can never resolve to, or clash with, another project's;
// - compiled validators are cached per project and key (a tool version), bounded twice: the
//   least recently used project drops its whole instance, and each project keeps a bounded
//   number of validators;
// - no `loadSchema`: a remote `$ref` is a compile error, never a network fetch.
import { Ajv2020, type ErrorObject, type Options, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { MAX_SCHEMA_PROGRAM, re2Engine, withPatternBudget } from './regexp.ts';
import { useLinearUniqueItems } from './unique.ts';
import { branchingRecursion, MAX_EXPANSION, schemaExpansion } from './expansion.ts';

export interface SchemaIssue {
  path: string;
  keyword: string;
  message: string;
}

/** Strict: unknown keywords and formats are errors (registration). Lax: they are ignored. */
function newAjv(strict: boolean, extra: Options = {}): Ajv2020 {
  const ajv = new Ajv2020({
    allErrors: true,
    logger: false,
    code: { regExp: re2Engine },
    ...(strict
      ? { strict: true, strictTypes: false, strictTuples: false, strictRequired: false }
      : { strict: false }),
    ...extra,
  });
  addFormats.default(ajv);
  useLinearUniqueItems(ajv);
  return ajv;
}

export type SchemaCheck =
  | { ok: true }
  | {
      ok: false;
      /** meta_schema: an unsupported `$schema`; invalid: not a JSON Schema; compile: does not compile. */
      reason: 'meta_schema' | 'invalid' | 'compile';
      message: string;
      issues: SchemaIssue[];
    };

const schemaIssue = (e: ErrorObject): SchemaIssue => ({
  path: e.instancePath || '/',
  keyword: e.keyword,
  message: e.message ?? 'invalid',
});

const messageOf = (err: unknown) => (err instanceof Error ? err.message : String(err));

/**
 * Checks a schema the way callers will validate with it, strictly (a misspelt `requried` is an
 * error, not a silently ignored constraint). A fresh ajv per check: nothing of the schema (its
 * `$id`s) outlives the check, so registrations cannot see each other, in any project.
 */
export function checkSchema(schema: Record<string, unknown>): SchemaCheck {
  return checkWith(newAjv(true), schema);
}

/**
 * checkSchema for many schemas of one owner (an OpenAPI import's tools), sharing one ajv: a new
 * ajv compiles the draft 2020-12 meta-schema again, tens of ms each. Only for schemas without
 * `$id`s (the import's converter drops them), which cannot see or collide with each other.
 */
export function createSchemaChecker(): (schema: Record<string, unknown>) => SchemaCheck {
  const ajv = newAjv(true);
  return (schema) => {
    try {
      return checkWith(ajv, schema);
    } finally {
      ajv.removeSchema(schema);
    }
  };
}

function checkWith(ajv: ReturnType<typeof newAjv>, schema: Record<string, unknown>): SchemaCheck {
  let valid: boolean;
  try {
    valid = ajv.validateSchema(schema) as boolean;
  } catch (err) {
    // A `$schema` other than draft 2020-12 (draft-07, say) has no meta-schema here.
    const message = messageOf(err);
    return {
      ok: false,
      reason: 'meta_schema',
      message,
      issues: [{ path: '/', keyword: 'compile', message }],
    };
  }
  if (!valid) {
    return {
      ok: false,
      reason: 'invalid',
      message: ajv.errorsText(ajv.errors, { dataVar: 'parameters' }),
      issues: (ajv.errors ?? []).map(schemaIssue),
    };
  }
  const expansion = expansionError(schema);
  if (expansion) {
    return {
      ok: false,
      reason: 'compile',
      message: expansion,
      issues: [{ path: '/', keyword: 'compile', message: expansion }],
    };
  }
  try {
    withPatternBudget(MAX_SCHEMA_PROGRAM, () => ajv.compile(schema));
  } catch (err) {
    const message = messageOf(err);
    return {
      ok: false,
      reason: 'compile',
      message,
      issues: [{ path: '/', keyword: 'compile', message }],
    };
  }
  return { ok: true };
}

/** Why a schema is too costly to evaluate, or undefined. */
function expansionError(schema: Record<string, unknown>): string | undefined {
  if (typeof schema !== 'object' || schema === null) return undefined;
  if (schemaExpansion(schema) > MAX_EXPANSION) {
    return `the schema expands to more than ${MAX_EXPANSION} subschema evaluations per value (its $refs multiply): use each definition fewer times`;
  }
  return branchingRecursion(schema);
}

/** A stored schema that does not compile here (it was accepted by an older check, say). */
export class SchemaCompileError extends Error {
  readonly code = 'schema_compile_failed';
  constructor(message: string, cause: unknown) {
    super(message, { cause });
    this.name = 'SchemaCompileError';
  }
}

export interface ProjectValidators {
  /**
   * The validator of `schema` in `project`, compiled once per `key` (a tool and its version):
   * pass a new key when the schema changes. Throws SchemaCompileError (also on later calls
   * with the same key, without compiling again).
   */
  get(project: string, key: string, schema: object): ValidateFunction;
  /** How many project instances and validators are held. */
  size(): { projects: number; validators: number };
}

export interface ProjectValidatorsOptions {
  /** Projects whose ajv instance is kept; the least recently used goes first. */
  maxProjects?: number;
  /** Validators kept per project; the least recently used goes first. */
  maxPerProject?: number;
}

interface ProjectEntry {
  ajv: Ajv2020;
  cache: Map<string, { schema: object; validate: ValidateFunction | SchemaCompileError }>;
}

/** Re-inserting on a hit keeps a Map in least-recently-used-first order. */
function touch<K, V>(map: Map<K, V>, key: K): V | undefined {
  const v = map.get(key);
  if (v !== undefined) {
    map.delete(key);
    map.set(key, v);
  }
  return v;
}

/**
 * Validators of stored schemas, for checking arguments. Not strict: the schema was checked
 * strictly when it was registered (MCP servers' schemas come as the servers wrote them), and a
 * call must not fail over a keyword a later ajv release grew stricter about.
 */
export function createProjectValidators(opts: ProjectValidatorsOptions = {}): ProjectValidators {
  const maxProjects = opts.maxProjects ?? 256;
  const maxPerProject = opts.maxPerProject ?? 1_000;
  const projects = new Map<string, ProjectEntry>();
  let validators = 0;

  function entryOf(project: string): ProjectEntry {
    let entry = touch(projects, project);
    if (entry) return entry;
    // `addUsedSchema: false`: two tools of one project (or two versions of one tool) may share
    // a root `$id`.
    entry = { ajv: newAjv(false, { addUsedSchema: false }), cache: new Map() };
    projects.set(project, entry);
    if (projects.size > maxProjects) {
      const [oldest, old] = projects.entries().next().value!;
      projects.delete(oldest);
      validators -= old.cache.size;
    }
    return entry;
  }

  return {
    get(project, key, schema) {
      const entry = entryOf(project);
      let hit = touch(entry.cache, key);
      if (!hit) {
        let validate: ValidateFunction | SchemaCompileError;
        const expansion = expansionError(schema as Record<string, unknown>);
        if (expansion) {
          validate = new SchemaCompileError(expansion, undefined);
        } else {
          try {
            validate = entry.ajv.compile(schema);
          } catch (err) {
            validate = new SchemaCompileError(messageOf(err), err);
          }
        }
        hit = { schema, validate };
        entry.cache.set(key, hit);
        validators++;
        if (entry.cache.size > maxPerProject) {
          const [oldKey, old] = entry.cache.entries().next().value!;
          entry.cache.delete(oldKey);
          validators--;
          // ajv also caches compiled schemas by object; drop it or the instance grows for ever.
          if (!(old.validate instanceof SchemaCompileError)) entry.ajv.removeSchema(old.schema);
        }
      }
      if (hit.validate instanceof SchemaCompileError) throw hit.validate;
      return hit.validate;
    },
    size: () => ({ projects: projects.size, validators }),
  };
}
