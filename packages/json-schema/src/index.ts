export { checkSchema, createProjectValidators, SchemaCompileError } from './compile.ts';
export type {
  ProjectValidators,
  ProjectValidatorsOptions,
  SchemaCheck,
  SchemaIssue,
} from './compile.ts';
export { compileRe2, re2Engine, UnsupportedPatternError } from './regexp.ts';
export type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
