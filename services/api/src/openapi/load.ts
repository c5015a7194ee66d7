// Reads an OpenAPI document sent to the api: JSON or YAML text, or a JSON value already parsed.
// Only 3.0 and 3.1 are taken. swagger-parser validates it against the OpenAPI schema and
// dereferences the internal `$ref`s; a `$ref` to anything outside the document (a URL or a file)
// is refused before the parser sees it, so the api never fetches a URL or reads a file a tenant
// names (the parser's file and http resolvers are switched off besides). Recursive schemas stay
// as `$ref`s (circular: 'ignore') and are widened to "any" by the converter. Before the parser
// runs, the document's depth, operations and expanded size are checked against their limits
// (measure.ts): the parser's own work grows with the expanded size, not the text's.
import SwaggerParser from '@apidevtools/swagger-parser';
import { parse as parseYaml } from 'yaml';
import type { OpenAPIV3, OpenAPIV3_1 } from 'openapi-types';
import { jsonDepth } from '@toolmesh/protocol';
import { ApiError } from '../errors.ts';
import { countOperations, expandedSize } from './measure.ts';

export type OpenApiDocument = OpenAPIV3.Document | OpenAPIV3_1.Document;

/** Most external `$ref`s listed in an error. */
const MAX_LISTED = 20;
/** Most characters of a parser message passed on to the caller. */
const MAX_MESSAGE = 2_000;

const invalid = (message: string, details?: Record<string, unknown>) =>
  new ApiError('invalid_openapi', message, details);

function parseText(text: string): unknown {
  try {
    // YAML 1.2 is a superset of JSON, so one parser reads both. Aliases are bounded by the
    // library (maxAliasCount), so a "billion laughs" document fails instead of expanding.
    return parseYaml(text, { maxAliasCount: 100, uniqueKeys: true });
  } catch (err) {
    throw invalid(
      `the document is neither JSON nor YAML: ${(err as Error).message}`.slice(0, MAX_MESSAGE),
    );
  }
}

/** JSON pointers of every `$ref` that leaves the document. */
function externalRefs(root: unknown): string[] {
  const found: string[] = [];
  const walk = (node: unknown, path: string): void => {
    if (found.length >= MAX_LISTED || typeof node !== 'object' || node === null) return;
    if (Array.isArray(node)) {
      node.forEach((v, i) => walk(v, `${path}/${i}`));
      return;
    }
    for (const [k, v] of Object.entries(node)) {
      const here = `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      if (k === '$ref' && typeof v === 'string' && !v.startsWith('#')) found.push(here);
      else walk(v, here);
    }
  };
  walk(root, '');
  return found;
}

export interface LoadLimits {
  /** api.max_json_depth: the document's nesting, as written. */
  maxDepth: number;
  /** api.openapi_max_document_operations. */
  maxOperations: number;
  /** api.openapi_max_expansion. */
  maxExpansion: number;
}

export async function loadOpenApi(input: unknown, limits: LoadLimits): Promise<OpenApiDocument> {
  const doc = typeof input === 'string' ? parseText(input) : input;
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
    throw invalid('the document is not an object');
  }
  if (jsonDepth(doc, limits.maxDepth) > limits.maxDepth) {
    throw new ApiError(
      'nesting_too_deep',
      `the document nests deeper than ${limits.maxDepth} levels (api.max_json_depth)`,
      { limit_depth: limits.maxDepth },
    );
  }
  const version = (doc as Record<string, unknown>)['openapi'];
  if (typeof version !== 'string' || !/^3\.[01]\.\d+/.test(version)) {
    const swagger = (doc as Record<string, unknown>)['swagger'];
    throw invalid(
      swagger !== undefined
        ? 'Swagger 2.0 documents are not supported: convert it to OpenAPI 3.0 or 3.1'
        : 'the document is not OpenAPI 3.0 or 3.1 (no `openapi: 3.0.x` or `3.1.x` field)',
      { openapi: typeof version === 'string' ? version : null },
    );
  }
  const external = externalRefs(doc);
  if (external.length > 0) {
    throw invalid(
      'the document refers to other files or URLs ($ref outside the document): bundle it into one document first',
      { refs: external },
    );
  }
  const operations = countOperations(doc as Record<string, unknown>);
  if (operations > limits.maxOperations) {
    throw new ApiError(
      'openapi_operations_limit',
      `the document has ${operations} operations, more than api.openapi_max_document_operations (${limits.maxOperations}): split it`,
      { operations, limit: limits.maxOperations },
    );
  }
  if (expandedSize(doc as Record<string, unknown>, limits.maxExpansion) > limits.maxExpansion) {
    throw new ApiError(
      'openapi_expansion_limit',
      `the document grows past ${limits.maxExpansion} objects and arrays once its $refs are expanded (api.openapi_max_expansion): schemas that refer to others several times multiply at every level`,
      { limit: limits.maxExpansion },
    );
  }
  try {
    return (await SwaggerParser.validate(doc as OpenApiDocument, {
      resolve: { external: false, file: false, http: false },
      dereference: { circular: 'ignore' },
    })) as OpenApiDocument;
  } catch (err) {
    throw invalid(
      `the document is not valid OpenAPI: ${(err as Error).message}`.slice(0, MAX_MESSAGE),
    );
  }
}
