// The CPU-bound part of an OpenAPI import, everything before the database: read the document,
// check it against its limits, convert it (Swagger 2.0 to OpenAPI 3.0 first), turn its operations
// into tools and
// keep the ones a registration by hand would accept. It runs in a worker thread (worker.ts) so
// that no document, however built, holds the api's event loop.
import { createSchemaChecker } from '@toolmesh/json-schema';
import { HttpSpec } from '@toolmesh/protocol';
import type { ImportedTool } from '@toolmesh/store';
import { ApiError } from '../errors.ts';
import {
  MAX_PARAMETERS_BYTES,
  assertRegistrable,
  checkHttpSpec,
  checkParametersSchema,
  jsonBytes,
} from '../routes/tools-schema.ts';
import { convertOpenApi, type ConvertOptions, type Skipped } from './convert.ts';
import { loadOpenApi, type LoadLimits } from './load.ts';

export interface PrepareLimits extends LoadLimits {
  /** tools.max_schema_depth. */
  maxSchemaDepth: number;
}

export interface Prepared {
  tools: ImportedTool[];
  skipped: Skipped[];
  filtered: number;
  warnings: string[];
}

/** A tool that passes every check a registration by hand would; otherwise the reason. */
function checkTool(
  t: ImportedTool,
  maxSchemaDepth: number,
  check: ReturnType<typeof createSchemaChecker>,
): string | undefined {
  try {
    assertRegistrable(t.name);
    if (jsonBytes(t.parameters) > MAX_PARAMETERS_BYTES) {
      return `its parameters schema is larger than ${MAX_PARAMETERS_BYTES} bytes`;
    }
    checkParametersSchema(t.parameters, maxSchemaDepth, 'parameters', check);
    const spec = HttpSpec.safeParse(t.spec);
    if (!spec.success) return `its request template is invalid: ${spec.error.issues[0]?.message}`;
    checkHttpSpec(spec.data, t.parameters);
    return undefined;
  } catch (err) {
    if (err instanceof ApiError) return err.message;
    throw err;
  }
}

export function prepareImport(
  document: unknown,
  options: ConvertOptions,
  limits: PrepareLimits,
): Prepared {
  const converted = convertOpenApi(loadOpenApi(document, limits), options);
  const skipped: Skipped[] = [...converted.skipped];
  const check = createSchemaChecker();
  const tools = converted.tools.filter((t) => {
    const reason = checkTool(t, limits.maxSchemaDepth, check);
    if (reason) skipped.push({ operation: t.name, reason });
    return reason === undefined;
  });
  return { tools, skipped, filtered: converted.filtered, warnings: converted.warnings };
}
