// Checks a call's arguments against the tool's JSON Schema (draft 2020-12) before anything is
// published, as the tool service itself would: bad input is answered here with its ajv errors
// and never reaches the bus. Validators come from @toolmesh/json-schema: one ajv instance per
// project (a `$id` of one project never meets another's), regexes on RE2 (linear time),
// compiled once per tool and updated_at (an edited schema is compiled afresh), bounded caches.
// Arguments nested deeper than tools.max_arguments_depth are refused before ajv (which recurses
// over the data) sees them.
import {
  createProjectValidators,
  SchemaCompileError,
  type ErrorObject,
  type ProjectValidatorsOptions,
} from '@toolmesh/json-schema';
import { asDraft2020, jsonDepth } from '@toolmesh/protocol';
import type { ToolRecord } from '@toolmesh/store';
import { ApiError } from '../errors.ts';

export interface ArgumentIssue {
  path: string;
  keyword: string;
  message: string;
}

export interface ArgumentsChecker {
  /**
   * Undefined when the arguments are valid; otherwise the issues, at most `maxIssues`. Throws
   * `nesting_too_deep` (400) for arguments deeper than the limit.
   */
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
  opts: ProjectValidatorsOptions & {
    maxIssues?: number;
    /** tools.max_arguments_depth. */
    maxDepth: number;
  },
): ArgumentsChecker {
  const maxIssues = opts.maxIssues ?? 20;
  const validators = createProjectValidators(opts);

  return {
    check: (tool, args) => {
      if (jsonDepth(args, opts.maxDepth) > opts.maxDepth) {
        throw new ApiError(
          'nesting_too_deep',
          `the arguments nest deeper than ${opts.maxDepth} levels of objects and arrays (tools.max_arguments_depth)`,
          { limit_depth: opts.maxDepth },
        );
      }
      let validate;
      try {
        validate = validators.get(
          tool.project_id,
          `${tool.name}\u0000${tool.updated_at.getTime()}`,
          asDraft2020(tool.parameters),
        );
      } catch (err) {
        // Stored before a check that refuses it now (a lookahead RE2 cannot run, say).
        if (!(err instanceof SchemaCompileError)) throw err;
        throw new ApiError(
          'invalid_schema',
          `the stored parameters schema of ${tool.name} does not compile: ${err.message}; update the tool`,
        );
      }
      if (validate(args)) return undefined;
      return (validate.errors ?? []).slice(0, maxIssues).map(issue);
    },
  };
}
