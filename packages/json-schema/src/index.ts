export {
  checkSchema,
  createSchemaChecker,
  createProjectValidators,
  SchemaCompileError,
} from './compile.ts';
export type {
  ProjectValidators,
  ProjectValidatorsOptions,
  SchemaCheck,
  SchemaIssue,
} from './compile.ts';
export {
  compileRe2,
  re2Engine,
  UnsupportedPatternError,
  PatternTooLargeError,
  MAX_PATTERN_PROGRAM,
  MAX_SCHEMA_PROGRAM,
} from './regexp.ts';
export type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
export { branchingRecursion, schemaExpansion, MAX_EXPANSION } from './expansion.ts';
