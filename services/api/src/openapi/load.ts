// Reads an OpenAPI document sent to the api: JSON or YAML text, or a JSON value already parsed.
// OpenAPI 3.0 and 3.1 are taken as they are; Swagger 2.0 is converted to 3.0 first
// (@scalar/openapi-upgrader), with what the conversion changes in the warnings. The document is
// not validated as a whole against the OpenAPI schema: the import reads what it uses (servers,
// paths, operations, parameters, bodies, security schemes), and an operation it cannot read is
// skipped with its reason, so a document that is wrong somewhere an import never looks (a
// webhook, an example) still imports. References are resolved as the converter reads them
// (refs.ts, JSON Schema 2020-12 `$id` scopes and anchors); a `$ref` to anything outside the
// document (a URL or a file) is refused before anything resolves, so the api never fetches a URL
// or reads a file a tenant names. Before that, the document's depth, operations and expanded size
// are checked against their limits (measure.ts): the conversion's work grows with the expanded
// size, not the text's.
import { upgradeFromTwoToThree } from '@scalar/openapi-upgrader/2.0-to-3.0';
import { parse as parseYaml } from 'yaml';
import type { OpenAPIV3, OpenAPIV3_1 } from 'openapi-types';
import { jsonDepth } from '@toolmesh/protocol';
import { ApiError } from '../errors.ts';
import { countOperations, expandedSize } from './measure.ts';
import { DOCUMENT_BASE, indexRefs, type Refs } from './refs.ts';

export type OpenApiDocument = OpenAPIV3.Document | OpenAPIV3_1.Document;

export interface Loaded {
  doc: OpenApiDocument;
  refs: Refs;
  warnings: string[];
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Most external `$ref`s listed in an error. */
const MAX_LISTED = 20;
/** Most characters of a parser message passed on to the caller. */
const MAX_MESSAGE = 2_000;

const invalid = (message: string, details?: Record<string, unknown>) =>
  new ApiError('invalid_openapi', message, details);

function parseText(text: string): unknown {
  // JSON text is read as JSON: the YAML parser builds a syntax tree of the whole text first,
  // about 40 times its size (GitHub's 5.7 MB description needs more than the worker's heap).
  if (/^\s*\{/.test(text)) {
    try {
      return JSON.parse(text);
    } catch {
      // Not JSON after all: YAML's flow mappings start with `{` too.
    }
  }
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
function externalRefs(refs: Refs): string[] {
  const found: string[] = [];
  const walk = (node: unknown, path: string, base: string): void => {
    if (found.length >= MAX_LISTED || typeof node !== 'object' || node === null) return;
    if (Array.isArray(node)) {
      node.forEach((v, i) => walk(v, `${path}/${i}`, base));
      return;
    }
    const here = refs.enter(node as Obj, base);
    for (const [k, v] of Object.entries(node)) {
      const at = `${path}/${k.replace(/~/g, '~0').replace(/\//g, '~1')}`;
      if ((k === '$ref' || k === '$dynamicRef') && typeof v === 'string') {
        if (refs.isExternal(v, here)) found.push(at);
      } else walk(v, at, here);
    }
  };
  walk(refs.root, '', DOCUMENT_BASE);
  return found;
}

/** Swagger 2.0 features the conversion changes in a way a caller of the tools would notice. */
function conversionWarnings(doc: Obj): string[] {
  const warnings = ['converted from Swagger 2.0 to OpenAPI 3.0 (@scalar/openapi-upgrader)'];
  const formats = new Set<string>();
  let forms = 0;
  const paths = isObj(doc['paths']) ? doc['paths'] : {};
  for (const item of Object.values(paths)) {
    if (!isObj(item)) continue;
    for (const op of Object.values(item)) {
      const params = isObj(op) && Array.isArray(op['parameters']) ? op['parameters'] : [];
      for (const p of params) {
        if (!isObj(p)) continue;
        if (p['in'] === 'formData') forms++;
        const f = p['collectionFormat'];
        if (typeof f === 'string' && f !== 'csv' && f !== 'multi') formats.add(f);
      }
    }
  }
  if (typeof doc['host'] !== 'string') {
    warnings.push('the document has no host: its server is relative (give base_url)');
  }
  if (forms > 0) {
    warnings.push(
      `${forms} formData parameter(s) became form bodies, which the http kind does not send: their operations are skipped`,
    );
  }
  if (formats.size > 0) {
    warnings.push(
      `collectionFormat ${[...formats].join(', ')} has no OpenAPI 3 style the http kind sends: those arrays go as repeated query parameters`,
    );
  }
  return warnings;
}

export interface LoadLimits {
  /** api.max_json_depth: the document's nesting, as written. */
  maxDepth: number;
  /** api.openapi_max_document_operations. */
  maxOperations: number;
  /** api.openapi_max_expansion. */
  maxExpansion: number;
}

export function loadOpenApi(input: unknown, limits: LoadLimits): Loaded {
  const parsed = typeof input === 'string' ? parseText(input) : input;
  if (!isObj(parsed)) throw invalid('the document is not an object');
  let doc: Obj = parsed;
  if (jsonDepth(doc, limits.maxDepth) > limits.maxDepth) {
    throw new ApiError(
      'nesting_too_deep',
      `the document nests deeper than ${limits.maxDepth} levels (api.max_json_depth)`,
      { limit_depth: limits.maxDepth },
    );
  }
  const warnings: string[] = [];
  // Operations are counted as written, before a conversion or anything else reads them all.
  const operations = countOperations(doc);
  if (operations > limits.maxOperations) {
    throw new ApiError(
      'openapi_operations_limit',
      `the document has ${operations} operations, more than api.openapi_max_document_operations (${limits.maxOperations}): split it`,
      { operations, limit: limits.maxOperations },
    );
  }
  const swagger = doc['swagger'];
  if (swagger !== undefined) {
    if (swagger !== '2.0') {
      const written = JSON.stringify(swagger).slice(0, 20);
      throw invalid(`Swagger ${written} is not supported: 2.0 is`, { swagger: written });
    }
    warnings.push(...conversionWarnings(doc));
    try {
      const upgraded: unknown = upgradeFromTwoToThree(structuredClone(doc));
      if (!isObj(upgraded)) throw new Error('the converter returned no document');
      doc = upgraded;
    } catch (err) {
      throw invalid(
        `the Swagger 2.0 document could not be converted: ${(err as Error).message}`.slice(
          0,
          MAX_MESSAGE,
        ),
      );
    }
  }
  const version = doc['openapi'];
  if (typeof version !== 'string' || !/^3\.[01]\.\d+/.test(version)) {
    throw invalid(
      'the document is not OpenAPI 3.0 or 3.1 nor Swagger 2.0 (no `openapi: 3.0.x` or `3.1.x` field)',
      { openapi: typeof version === 'string' ? version : null },
    );
  }
  const info = doc['info'];
  const problems = [
    !isObj(info) && 'info is missing',
    isObj(info) && typeof info['title'] !== 'string' && 'info.title is not a string',
    isObj(info) && typeof info['version'] !== 'string' && 'info.version is not a string',
    doc['paths'] !== undefined && !isObj(doc['paths']) && 'paths is not an object',
    doc['paths'] === undefined && version.startsWith('3.0') && 'paths is missing',
  ].filter((p): p is string => typeof p === 'string');
  if (problems.length > 0) {
    throw invalid(`the document is not valid OpenAPI: ${problems.join('; ')}`, { problems });
  }
  const refs = indexRefs(doc);
  const external = externalRefs(refs);
  if (external.length > 0) {
    throw invalid(
      'the document refers to other files or URLs ($ref outside the document): bundle it into one document first',
      { refs: external },
    );
  }
  if (expandedSize(refs, limits.maxExpansion) > limits.maxExpansion) {
    throw new ApiError(
      'openapi_expansion_limit',
      `the document grows past ${limits.maxExpansion} objects and arrays once its $refs are expanded (api.openapi_max_expansion): schemas that refer to others several times multiply at every level`,
      { limit: limits.maxExpansion },
    );
  }
  return { doc: doc as OpenApiDocument, refs, warnings };
}
