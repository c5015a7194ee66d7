export { inspectSkillZip } from './package.ts';
export type { SkillPackage, SkillFile } from './package.ts';
export { extractSkillZip, readSkillFiles } from './extract.ts';
export type { ExtractOptions, SkillFileData } from './extract.ts';
export { DEFAULT_SKILL_ZIP_LIMITS, MAX_SKILL_MD_BYTES, resolveLimits } from './limits.ts';
export type { SkillZipLimits } from './limits.ts';
export {
  MAX_COMPATIBILITY_CHARS,
  MAX_DESCRIPTION_CHARS,
  SKILL_NAME_PATTERN,
  parseSkillMd,
} from './front-matter.ts';
export type { SkillFrontMatter } from './front-matter.ts';
export { SkillPackageError, SkillPackageErrorCode, skillPackageErrorCodeOf } from './errors.ts';
export {
  TOOL_CATALOG,
  ReservedTarget,
  ToolCategory,
  skillsTools,
  builtinTools,
  catalogTool,
  isReservedTarget,
  isReservedToolName,
  LONG_RUNNING_TOOLS,
} from './catalog.ts';
export type { CatalogTool, JsonSchema, ToolAnnotations } from './catalog.ts';
export {
  SkillName,
  SkillVersion,
  SessionId,
  Env,
  Input,
  JobStep,
  LoadArgs,
  ActivateArgs,
  RunCmdArgs,
  RunCmdAsyncArgs,
  RunServiceArgs,
  StartJobArgs,
  TaskRef,
  TaskWatchArgs,
  JobRef,
  JobWatchArgs,
  EchoArgs,
  SleepArgs,
  RELATIVE_PATH_PATTERN,
  ENV_NAME_PATTERN,
  MAX_COMMAND_CHARS,
  MAX_PATH_CHARS,
  MAX_ENV_VARS,
  MAX_EXPOSED_PORTS,
  MAX_JOB_STEPS,
} from './catalog-args.ts';
export {
  ExecutePythonArgs,
  GetDocumentArgs,
  ListFilesArgs,
  MAX_FILE_PATH,
  ReadFileArgs,
  SearchDocumentsArgs,
  WriteFileArgs,
} from './catalog-builtin.ts';
export {
  DependencyKind,
  SkillDependencyError,
  dependencyKinds,
  skillDependencies,
} from './dependencies.ts';
export type { DependencyOptions, SkillDependencies } from './dependencies.ts';
export { skillLocation } from './layout.ts';
export { renderToolReference } from './catalog-docs.ts';
export { COMMON_ERRORS, INTERRUPTED, TOOL_ERRORS, type ToolErrorCase } from './catalog-errors.ts';
export { RESULTS } from './catalog-results.ts';
