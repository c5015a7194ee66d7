// Checks a call's arguments against the tool's JSON Schema (draft 2020-12) before anything is
// published, as the tool service itself would: bad input is answered here with its ajv errors
// and never reaches the bus. Compiled validators are cached per project, tool and updated_at, so
// an edited schema is compiled afresh and the old one ages out.
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import { asDraft2020 } from '@toolmesh/protocol';
import type { ToolRecord } from '@toolmesh/store';

export interface ArgumentIssue {
  path: string;
  keyword: string;
  message: string;
}

export interface ArgumentsChecker {
  /** Undefined when the arguments are valid; otherwise the issues, at most `maxIssues`. */
  check(tool: ToolRecord, args: Record<string, unknown>): ArgumentIssue[] | undefined;
}

const issue = (e: ErrorObject): ArgumentIssue => {
  // `required` reports the object, not the missing key: name the key so the path points at it.
  const missing =
    e.keyword === 'required'
      ? (e.params as { missingProperty?: string }).missingProperty
      : undefined;
  const path = missing ? `${e.instancePath}/${missing}` : e.instancePath;
  return { path: path || '/', keyword: e.keyword, message: e.message ?? 'invalid' };
};

export function createArgumentsChecker(
  opts: { maxEntries?: number; maxIssues?: number } = {},
): ArgumentsChecker {
  const maxEntries = opts.maxEntries ?? 1_000;
  const maxIssues = opts.maxIssues ?? 20;
  // One instance for every project. `addUsedSchema: false` keeps a schema's `$id` out of the
  // instance's registry, so two tools (of any projects) with the same `$id` cannot collide.
  // Not strict: the schema was checked strictly when the tool was registered, and a call must
  // not fail over a keyword a later ajv release grew stricter about.
  const ajv = new Ajv2020({ allErrors: true, strict: false, addUsedSchema: false, logger: false });
  addFormats.default(ajv);
  // Insertion-ordered: re-inserting on a hit makes the first key the least recently used.
  const cache = new Map<string, { schema: object; validate: ValidateFunction }>();

  function validator(tool: ToolRecord): ValidateFunction {
    const key = `${tool.project_id}\u0000${tool.name}\u0000${tool.updated_at.getTime()}`;
    const hit = cache.get(key);
    if (hit) {
      cache.delete(key);
      cache.set(key, hit);
      return hit.validate;
    }
    const schema = asDraft2020(tool.parameters);
    const validate = ajv.compile(schema);
    cache.set(key, { schema, validate });
    if (cache.size > maxEntries) {
      const [oldKey, old] = cache.entries().next().value!;
      cache.delete(oldKey);
      // ajv also caches compiled schemas by object; drop it or the instance grows for ever.
      ajv.removeSchema(old.schema);
    }
    return validate;
  }

  return {
    check: (tool, args) => {
      const validate = validator(tool);
      if (validate(args)) return undefined;
      return (validate.errors ?? []).slice(0, maxIssues).map(issue);
    },
  };
}
