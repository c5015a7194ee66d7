// The error codes each reserved tool files, with when: read off the handlers' throws in
// services/skills (skills/*, builtin/*). Codes are typed by the protocol's code catalog, so a
// code that is not in it does not compile. Codes any call can end with (a bad argument, the
// deadline, a cancel, a crash) are listed once, in COMMON_ERRORS.
import type { ErrorCode } from '@toolmesh/protocol';

export interface ToolErrorCase {
  readonly code: ErrorCode;
  readonly when: string;
}

const c = (code: ErrorCode, when: string): ToolErrorCase => Object.freeze({ code, when });

/** What every call of a reserved tool may end with, whatever the tool. */
export const COMMON_ERRORS: readonly ToolErrorCase[] = Object.freeze([
  c('invalid_arguments', 'the arguments do not match the schema above'),
  c(
    'nesting_too_deep',
    'the arguments nest deeper than `tools.max_arguments_depth` (64) levels of objects and arrays; a 400 over HTTP, a failed card at the first delivery on the bus',
  ),
  c('timeout', "the call outlived its deadline (the tool's own limit, or the caller's)"),
  c('canceled', 'the call was canceled while it ran'),
  c('internal_error', 'the handler crashed'),
  c('unavailable', 'Postgres, NATS or the artifact store could not be reached; retried'),
]);

/** Only for tools that are not idempotent: the instance died mid-call and it was not re-run. */
export const INTERRUPTED = c(
  'interrupted',
  'the instance running it died mid-call; not run again (a second run would repeat its effect)',
);

const SKILL_MISSING = c(
  'tool_error',
  'no skill of that name, it is disabled, it has no active version, or no such `version`',
);
const SANDBOX = [
  c('busy', 'another call holds the sandbox session and it did not free up in time'),
  c('quota_exceeded', "a new sandbox would pass the project's sandbox quota"),
];
const PLACING = [
  c(
    'invalid_dependencies',
    "the skill's requirements.txt, pyproject.toml, package.json or package-lock.json is bad, or would fetch from outside the configured indexes",
  ),
  c('dependency_install_failed', "installing the skill's dependencies failed"),
  c('timeout', 'its dependencies were still being installed by another call when time ran out'),
  c('unavailable', 'the sandbox provider cannot mount a skill environment'),
];
const WITH_SKILL = c(
  'tool_error',
  'with `skill`: no such skill, or it is disabled or has no active version',
);
const INPUTS = c(
  'tool_error',
  'an input artifact is not in this project, or is larger than the limit',
);
const COMMAND_CUT = [
  c('timeout', 'the command ran past `timeout_ms` and was killed (details keep its output)'),
  c('oom', 'the command went past its memory limit and was killed'),
  c('cpu_limit', 'the command used more CPU time than its limit and was killed'),
  c('disk_full', "the command would take the sandbox's files past its disk limit"),
];
const STARTING = [
  WITH_SKILL,
  INPUTS,
  ...SANDBOX,
  ...PLACING,
  c('quota_exceeded', 'the project already runs as many tasks and jobs as its quota allows'),
];
/** Codes that only a call with `session_id` can meet (load places the skill only then). */
const withSession = (cases: readonly ToolErrorCase[]) =>
  cases.map((e) => c(e.code, `with \`session_id\`: ${e.when}`));
const NO_TASK = c('tool_error', 'no task of that id in this project (details.reason `not_found`)');
const NO_JOB = c('tool_error', 'no job of that id in this project (details.reason `not_found`)');

/** Tool-specific error codes, by full tool name. */
export const TOOL_ERRORS: Readonly<Record<string, readonly ToolErrorCase[]>> = Object.freeze({
  'skills.load': [SKILL_MISSING, ...withSession([...SANDBOX, ...PLACING])],
  'skills.activate': [SKILL_MISSING, ...SANDBOX, ...PLACING],
  'skills.run_cmd': [
    c('invalid_arguments', "`timeout_ms` is above the deployment's limit"),
    WITH_SKILL,
    INPUTS,
    ...SANDBOX,
    ...PLACING,
    ...COMMAND_CUT,
  ],
  'skills.run_cmd_async': STARTING,
  'skills.run_service': [
    ...STARTING,
    c(
      'tool_error',
      'a port in `expose_ports` did not answer in `ready_timeout_ms` (`ports_not_ready`)',
    ),
    c('tool_error', 'the service ended before its ports answered (`service_ended`)'),
    c('tool_error', "the sandbox's network could not be entered (`ports_unreachable`)"),
  ],
  'skills.start_job': [
    ...STARTING,
    c('tool_error', 'the session already runs a job (details.reason `session_busy`)'),
  ],
  'skills.job_status': [NO_JOB],
  'skills.job_watch': [NO_JOB],
  'skills.job_cancel': [
    NO_JOB,
    c('tool_error', 'the instance running the job did not confirm (`owner_unreachable`)'),
  ],
  'skills.task_status': [NO_TASK],
  'skills.task_watch': [NO_TASK],
  'skills.task_cancel': [
    NO_TASK,
    c('tool_error', 'the instance running the task did not confirm (`owner_unreachable`)'),
  ],
  'builtin.echo': [],
  'builtin.sleep': [],
  'builtin.execute_python': [
    c('invalid_arguments', "`timeout_ms` is above the deployment's limit"),
    c('quota_exceeded', "its fresh sandbox would pass the project's sandbox quota"),
    c('timeout', 'the program ran past `timeout_ms` and was killed (details keep its output)'),
    c('oom', 'the program went past its memory limit (a MemoryError, or killed)'),
    c('cpu_limit', 'the program used more CPU time than its limit and was killed'),
  ],
  'builtin.read_file': [
    c('invalid_arguments', 'the path is not a valid path'),
    c('not_found', 'no file at that path'),
  ],
  'builtin.write_file': [
    c('invalid_arguments', 'the path is not a valid path, is the root, or the content holds NUL'),
    c(
      'quota_exceeded',
      "the file is too large, or the project's file count or total size is reached",
    ),
  ],
  'builtin.list_files': [c('invalid_arguments', 'the path is not a valid path')],
  'builtin.search_documents': [],
  'builtin.get_document': [c('not_found', 'no document of that id in this project')],
});
