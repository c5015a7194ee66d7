// The reserved tool catalog: the twelve `skills.*` tools and the `builtin.*` diagnostics. The
// api seeds these into a project's tool registry (so their names cannot be registered by
// anyone else) and the skills service validates calls with the same schemas, so what an LLM
// is shown and what the service accepts cannot drift apart.
import { z } from 'zod';
import {
  ActivateArgs,
  EchoArgs,
  JobRef,
  JobWatchArgs,
  LoadArgs,
  RunCmdArgs,
  RunCmdAsyncArgs,
  RunServiceArgs,
  SleepArgs,
  StartJobArgs,
  TaskRef,
  TaskWatchArgs,
} from './catalog-args.ts';
import {
  ExecutePythonArgs,
  GetDocumentArgs,
  ListFilesArgs,
  ReadFileArgs,
  SearchDocumentsArgs,
  WriteFileArgs,
} from './catalog-builtin.ts';
import { TOOL_ERRORS, type ToolErrorCase } from './catalog-errors.ts';
import { RESULTS } from './catalog-results.ts';

export const ReservedTarget = { skills: 'skills', builtin: 'builtin' } as const;
export type ReservedTarget = (typeof ReservedTarget)[keyof typeof ReservedTarget];

export const ToolCategory = {
  skills: 'skills',
  diagnostics: 'diagnostics',
  files: 'files',
  documents: 'documents',
} as const;
export type ToolCategory = (typeof ToolCategory)[keyof typeof ToolCategory];

/** A JSON Schema document (draft 2020-12), as stored in the tool registry. */
export type JsonSchema = Record<string, unknown>;

export interface CatalogTool {
  /** `<target>.<tool>`, e.g. `skills.run_cmd`. */
  readonly name: string;
  readonly target: ReservedTarget;
  readonly tool: string;
  readonly description: string;
  readonly category: ToolCategory;
  readonly args: z.ZodType;
  /** The arguments' JSON Schema, generated from `args`. */
  readonly parameters: JsonSchema;
  /**
   * The `result` object a successful call files (strict: no field beyond these). Documentation
   * and a test contract; not given to the registry or to MCP clients as an outputSchema.
   */
  readonly result: z.ZodType;
  /** The result's JSON Schema, generated from `result`. */
  readonly resultSchema: JsonSchema;
  /** The error codes this tool files beyond the common ones, with when. */
  readonly errors: readonly ToolErrorCase[];
  /** MCP tool annotations: hints for clients about what a call does. */
  readonly annotations: ToolAnnotations;
  /**
   * Whether running a call twice is harmless. A non-idempotent call whose instance died mid-run
   * is filed `interrupted` instead of being run again (unless the caller opts in).
   */
  readonly idempotent: boolean;
}

/** The MCP tool annotations the registry keeps (all hints; absent means unknown). */
export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

/** Reads only (a skill, a status, a watch, the diagnostics): safe to repeat, touches nothing. */
const READS: ToolAnnotations = Object.freeze({
  readOnlyHint: true,
  destructiveHint: false,
  idempotentHint: true,
  openWorldHint: false,
});
/**
 * Runs a command of the model's choosing in a sandbox: it may change or delete the session's
 * files, a second call runs it again, and the deployment may allow network domains.
 */
const RUNS: ToolAnnotations = Object.freeze({
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: false,
  openWorldHint: true,
});
/** Ends a task or a job: destructive for it, and cancelling twice is cancelling once. */
const CANCELS: ToolAnnotations = Object.freeze({
  readOnlyHint: false,
  destructiveHint: true,
  idempotentHint: true,
  openWorldHint: false,
});
const ANNOTATIONS: Record<string, ToolAnnotations> = {
  'skills.load': READS,
  // Puts the same files in the same place: repeatable, nothing of the session is lost.
  'skills.activate': Object.freeze({
    readOnlyHint: false,
    destructiveHint: false,
    idempotentHint: true,
    openWorldHint: false,
  }),
  'skills.run_cmd': RUNS,
  'skills.run_cmd_async': RUNS,
  'skills.run_service': RUNS,
  'skills.start_job': RUNS,
  'skills.job_status': READS,
  'skills.job_watch': READS,
  'skills.job_cancel': CANCELS,
  'skills.task_status': READS,
  'skills.task_watch': READS,
  'skills.task_cancel': CANCELS,
  'builtin.echo': READS,
  'builtin.sleep': READS,
  // A fresh sandbox per call, thrown away after: nothing of the project changes.
  'builtin.execute_python': Object.freeze({
    readOnlyHint: true,
    destructiveHint: false,
    idempotentHint: false,
    openWorldHint: false,
  }),
  'builtin.read_file': READS,
  'builtin.list_files': READS,
  // Replaces the file whole: what was there is gone, and writing it twice is writing it once.
  'builtin.write_file': Object.freeze({
    readOnlyHint: false,
    destructiveHint: true,
    idempotentHint: true,
    openWorldHint: false,
  }),
  'builtin.search_documents': READS,
  'builtin.get_document': READS,
};

/**
 * The reserved tools that start work which outlives their call (a command, a service, a job):
 * the MCP facade lists them with task support.
 */
export const LONG_RUNNING_TOOLS: ReadonlySet<string> = new Set([
  'skills.run_cmd_async',
  'skills.run_service',
  'skills.start_job',
]);

/** Tools whose second run would repeat an effect: a command, a process, a job. */
const NOT_IDEMPOTENT = new Set([
  'skills.run_cmd',
  'skills.run_cmd_async',
  'skills.run_service',
  'skills.start_job',
]);

function define(
  target: ReservedTarget,
  tool: string,
  category: ToolCategory,
  args: z.ZodType,
  description: string,
): CatalogTool {
  const name = `${target}.${tool}`;
  const parameters = z.toJSONSchema(args, { target: 'draft-2020-12', io: 'input' }) as JsonSchema;
  const result = RESULTS[name];
  const errors = TOOL_ERRORS[name];
  // A reserved tool without a documented result or error list is a mistake caught at load.
  if (!result || !errors) throw new Error(`reserved tool ${name} has no result schema or errors`);
  const resultSchema = z.toJSONSchema(result, {
    target: 'draft-2020-12',
    io: 'output',
  }) as JsonSchema;
  return Object.freeze({
    name: `${target}.${tool}`,
    target,
    tool,
    description,
    category,
    args,
    parameters,
    result,
    resultSchema,
    errors,
    annotations: ANNOTATIONS[`${target}.${tool}`] ?? {},
    idempotent: !NOT_IDEMPOTENT.has(`${target}.${tool}`),
  });
}

const skills = (tool: string, args: z.ZodType, description: string) =>
  define(ReservedTarget.skills, tool, ToolCategory.skills, args, description);
const builtin = (
  tool: string,
  args: z.ZodType,
  description: string,
  category: ToolCategory = ToolCategory.diagnostics,
) => define(ReservedTarget.builtin, tool, category, args, description);

const SKILLS_TOOLS: readonly CatalogTool[] = Object.freeze([
  skills(
    'load',
    LoadArgs,
    "Reads a skill: returns its SKILL.md instructions, its file list, where it is placed (skills/<name>/, relative to the sandbox session's root) and the state of its dependency environment. Load a skill before using it. With session_id it is also placed in that session: files copied to skills/<name>/ and its dependencies (requirements.txt, pyproject.toml, package.json) installed once per version and put on PATH; without session_id no sandbox is touched.",
  ),
  skills(
    'activate',
    ActivateArgs,
    "Puts a skill's files into a sandbox session, in the folder skills/<name>/ (relative to the session's root), with its dependencies installed, so later commands with the same session_id can run them. Returns the version activated and the folder.",
  ),
  skills(
    'run_cmd',
    RunCmdArgs,
    'Runs a shell command in a sandbox and waits for it. Returns the exit code, the tails of stdout and stderr (with a truncation flag), the artifacts made from `outputs`, and timing. With `skill`, the skill is placed first (files at skills/<name>/, dependencies installed and on PATH) and the command runs in that folder. Network is denied unless the deployment allows a domain.',
  ),
  skills(
    'run_cmd_async',
    RunCmdAsyncArgs,
    'Starts a shell command in a sandbox and returns a task_id at once. Follow it with skills.task_status, skills.task_watch or skills.task_cancel; the result there has the same fields as skills.run_cmd.',
  ),
  skills(
    'run_service',
    RunServiceArgs,
    'Starts a long-running process (a server) in a sandbox session and returns a task_id at once. Ports in `expose_ports` are forwarded to 127.0.0.1 on the host; the result lists the endpoints, each with a token: send `Authorization: Bearer <token>` (HTTP only; anything else gets 401). Stop it with skills.task_cancel.',
  ),
  skills(
    'start_job',
    StartJobArgs,
    'Starts a job: steps run one after another in one sandbox, each with its own time limit and env; the job stops at the first failing step. Returns a job_id at once. One job runs at a time per session.',
  ),
  skills(
    'job_status',
    JobRef,
    "Returns a job's state, its current step and each finished step's result.",
  ),
  skills(
    'job_watch',
    JobWatchArgs,
    'Waits until a job ends or timeout_ms passes, sending progress events every heartbeat_ms, then returns its status.',
  ),
  skills(
    'job_cancel',
    JobRef,
    'Cancels a job: the running step is killed and no further step starts.',
  ),
  skills(
    'task_status',
    TaskRef,
    "Returns a task's state and, once it has ended, its result; for a service, whether its endpoints are still active.",
  ),
  skills(
    'task_watch',
    TaskWatchArgs,
    'Waits until a task ends or timeout_ms passes, sending progress events every heartbeat_ms, then returns its status.',
  ),
  skills('task_cancel', TaskRef, 'Cancels a task: its whole process group is killed.'),
]);

const BUILTIN_TOOLS: readonly CatalogTool[] = Object.freeze([
  builtin('echo', EchoArgs, 'Returns its arguments unchanged.'),
  builtin(
    'sleep',
    SleepArgs,
    'Waits for `ms` milliseconds (at most one hour), then returns how long it slept.',
  ),
  builtin(
    'execute_python',
    ExecutePythonArgs,
    'Runs a short Python 3 program in a fresh sandbox with no network (5 s and 256 MiB by default) and returns its exit code, stdout and stderr.',
    ToolCategory.diagnostics,
  ),
  builtin(
    'read_file',
    ReadFileArgs,
    "Reads a text file from the project's files (shared by the project's agents, kept across sandboxes and tasks).",
    ToolCategory.files,
  ),
  builtin(
    'write_file',
    WriteFileArgs,
    "Writes a text file into the project's files, replacing it if it exists; folders are implied by the path.",
    ToolCategory.files,
  ),
  builtin(
    'list_files',
    ListFilesArgs,
    "Lists the project's files under a folder (all of them by default), with sizes and times.",
    ToolCategory.files,
  ),
  builtin(
    'search_documents',
    SearchDocumentsArgs,
    "Full-text search over the project's documents: the best matches first, each with its id, title and a snippet with the matching words in <mark>.",
    ToolCategory.documents,
  ),
  builtin(
    'get_document',
    GetDocumentArgs,
    'Returns a whole document (title, body, metadata) by the id a search returned.',
    ToolCategory.documents,
  ),
]);

/** Every reserved tool, skills first. */
export const TOOL_CATALOG: readonly CatalogTool[] = Object.freeze([
  ...SKILLS_TOOLS,
  ...BUILTIN_TOOLS,
]);

export function skillsTools(): readonly CatalogTool[] {
  return SKILLS_TOOLS;
}

export function builtinTools(): readonly CatalogTool[] {
  return BUILTIN_TOOLS;
}

/** The catalog entry of a reserved tool, by full name. */
export function catalogTool(name: string): CatalogTool | undefined {
  return TOOL_CATALOG.find((t) => t.name === name);
}

/**
 * Whether a target is reserved. Compared without case: `Skills.run_cmd` is a different NATS
 * subject, but to a person (or an LLM) it reads as the reserved tool, so it is refused too.
 */
export function isReservedTarget(target: string): boolean {
  return Object.hasOwn(ReservedTarget, target.toLowerCase());
}

/** True for `skills.*` and `builtin.*`: names no one may register. */
export function isReservedToolName(name: string): boolean {
  const dot = name.indexOf('.');
  return isReservedTarget(dot < 0 ? name : name.slice(0, dot));
}
