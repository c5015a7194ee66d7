// The CPU-bound part of an OpenAPI import, everything before the database: read the document,
// check it against its limits, validate and dereference it, convert its operations to tools and
// keep the ones a registration by hand would accept. It runs in a worker thread (worker.ts) so
// that no document, however built, holds the api's event loop.
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
function checkTool(t: ImportedTool, maxSchemaDepth: number): string | undefined {
  try {
    assertRegistrable(t.name);
    if (jsonBytes(t.parameters) > MAX_PARAMETERS_BYTES) {
      return `its parameters schema is larger than ${MAX_PARAMETERS_BYTES} bytes`;
    }
    checkParametersSchema(t.parameters, maxSchemaDepth);
    const spec = HttpSpec.safeParse(t.spec);
    if (!spec.success) return `its request template is invalid: ${spec.error.issues[0]?.message}`;
    checkHttpSpec(spec.data, t.parameters);
    return undefined;
  } catch (err) {
    if (err instanceof ApiError) return err.message;
    throw err;
  }
}

export async function prepareImport(
  document: unknown,
  options: ConvertOptions,
  limits: PrepareLimits,
): Promise<Prepared> {
  const doc = await loadOpenApi(document, limits);
  const converted = convertOpenApi(doc, options);
  const skipped: Skipped[] = [...converted.skipped];
  const tools = converted.tools.filter((t) => {
    const reason = checkTool(t, limits.maxSchemaDepth);
    if (reason) skipped.push({ operation: t.name, reason });
    return reason === undefined;
  });
  return { tools, skipped, filtered: converted.filtered, warnings: converted.warnings };
}
