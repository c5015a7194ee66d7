// Result schemas of the reserved tools: the fields of the `result` object each handler files on
// success. Every object is strict, so a field a handler adds without adding it here fails the
// test that runs each tool through the mesh (tests/tool-results.test.ts), and docs/tools.md,
// rendered from these schemas, cannot describe fields that are not there. They are documentation
// and a test contract only: the registry does not get them as an MCP outputSchema.
import { z } from 'zod';

const iso = (what: string) => z.string().describe(`${what} (ISO 8601, UTC)`);
const sha256 = z.string().regex(/^[0-9a-f]{64}$/);

const SkillRef = z
  .strictObject({
    name: z.string().describe('The skill placed before the command'),
    version: sha256.describe('Its version (the sha256 of its zip)'),
  })
  .describe('The skill the command ran with, or null without `skill`');

export const Denial = z.strictObject({
  kind: z.enum(['filesystem', 'network', 'other']).describe('What was refused'),
  operation: z.string().describe('The refused syscall (`openat`, ...) or `network-outbound`'),
  target: z.string().describe('The path or `host:port` it was aimed at'),
  source: z.literal('runtime').describe('Where the report came from'),
});

/** What a finished command returns: skills.run_cmd and builtin.execute_python. */
const execOutput = {
  exit_code: z.number().int().nullable().describe('Exit code; null when a signal ended it'),
  signal: z.string().nullable().describe('The signal that ended it (e.g. `SIGKILL`), or null'),
  stdout: z.string().describe('The tail of stdout'),
  stderr: z.string().describe('The tail of stderr'),
  stdout_truncated: z.boolean().describe('True when bytes before the stdout tail were dropped'),
  stderr_truncated: z.boolean().describe('True when bytes before the stderr tail were dropped'),
  stdout_bytes: z.number().int().min(0).describe('Every byte written to stdout, kept or not'),
  stderr_bytes: z.number().int().min(0).describe('Every byte written to stderr, kept or not'),
  duration_ms: z.number().int().min(0).describe('How long it ran'),
  denials: z
    .array(Denial)
    .describe('What the sandbox refused while it ran (files outside it, network)'),
};

export const Artifact = z.strictObject({
  path: z.string().describe('The output path the artifact was made from'),
  artifact_id: z.string().describe('Id to download it or pass it as an input'),
  filename: z.string().describe('Its file name'),
  mime: z.string().describe('Its media type'),
  size_bytes: z.number().int().min(0).describe('Its size'),
  sha256: sha256.describe('The sha256 of its bytes'),
});
export const OutputError = z.strictObject({
  path: z.string().describe('The output path that was not collected'),
  code: z.enum(['missing', 'too_large', 'not_a_file', 'escapes_workdir']).describe('Why not'),
  message: z.string().describe('Why not, in words'),
});
const artifacts = z.array(Artifact).describe('One artifact per collected file of `outputs`');
const outputErrors = z.array(OutputError).describe('The `outputs` that could not be collected');

/** A dependency environment a placed skill got (null: the skill declares no dependencies). */
const PlacedEnv = z
  .strictObject({
    status: z.literal('ready').describe('State of the environment; always `ready` once placed'),
    kinds: z.array(z.string()).describe('What was installed: `python`, `node`'),
    location: z.string().describe('Where the environment is, as commands in the sandbox see it'),
    builds: z.number().int().min(1).describe('How often this version was built'),
  })
  .nullable()
  .describe('The dependency environment, or null when the skill declares none');

const EnvState = z
  .union([
    z.null(),
    z.strictObject({
      status: z.literal('not_built').describe('No session has placed this version yet'),
      kinds: z.array(z.string()).describe('What its dependencies need: `python`, `node`'),
    }),
    z.strictObject({
      status: z.enum(['building', 'ready', 'failed']).describe('State of its environment'),
      kinds: z.array(z.string()).describe('What its dependencies need: `python`, `node`'),
      provider: z.enum(['local', 'e2b']).describe('The sandbox provider it is built for'),
      builds: z.number().int().min(0).describe('How often this version was built'),
      started_at: iso('When the last build started'),
      finished_at: iso('When it ended').nullable(),
      error: z.record(z.string(), z.unknown()).nullable().optional().describe('Why it failed'),
      output_tail: z.string().optional().describe('The tail of a failed build'),
    }),
  ])
  .describe('The dependency environment, or null when the skill declares none');

const placedFields = {
  name: z.string().describe('The skill'),
  version: sha256.describe('The version (sha256 of its zip)'),
  location: z.string().describe('Its folder, relative to the session root: skills/<name>'),
  files: z.array(z.string()).describe('Its files, relative to its folder'),
  skill_md: z.string().describe('Its SKILL.md'),
};

const LoadResult = z.strictObject({
  ...placedFields,
  description: z.string().describe('Its description, from SKILL.md'),
  placed: z.boolean().describe('True when it was placed in `session_id`'),
  session_id: z.string().optional().describe('The session it was placed in (only when placed)'),
  environment: z
    .union([PlacedEnv, EnvState])
    .describe(
      'Its dependency environment (null when it declares none): when placed, `ready` with ' +
        'its location; otherwise its last build, or `not_built`',
    ),
});
const ActivateResult = z.strictObject({ ...placedFields, environment: PlacedEnv });

const RunCmdResult = z.strictObject({
  ...execOutput,
  skill: SkillRef.nullable(),
  workdir: z.string().describe('The folder it ran in, relative to the session root'),
  artifacts,
  output_errors: outputErrors,
});

const started = {
  task_id: z.string().describe('Id for task_status, task_watch and task_cancel'),
  status: z.literal('running').describe('Always `running`: the call returns once it started'),
  started_at: iso('When it started'),
  timeout_ms: z.number().int().describe('Its time limit, after which it is killed'),
};
const endpoint = {
  port: z.number().int().describe('The port inside the sandbox'),
  host: z.string().describe('Where to connect'),
  host_port: z.number().int().describe('The port to connect to'),
  host_port_fallback: z
    .boolean()
    .optional()
    .describe("True when the host port is not the service's own (that one was taken)"),
  url: z.string().describe('Its base URL'),
};
const RunServiceResult = z.strictObject({
  ...started,
  endpoints: z
    .array(
      z.strictObject({
        ...endpoint,
        token: z
          .string()
          .optional()
          .describe('Send `Authorization: Bearer <token>`; given once, here only'),
      }),
    )
    .describe('One per exposed port, once every port answers'),
});

const failure = z
  .strictObject({
    code: z.string().describe('Why it failed: `timeout`, `oom`, `tool_error`, `orphaned`, ...'),
    message: z.string().describe('Why, in words'),
  })
  .nullable()
  .describe('Why it failed, or null');
const runStatus = ['running', 'succeeded', 'failed', 'timeout', 'canceled', 'orphaned'] as const;

const taskView = {
  task_id: z.string().describe('The task'),
  status: z.enum(runStatus).describe('Its state'),
  command: z.string().describe('Its command'),
  sandbox_id: z.string().describe('The sandbox it runs in'),
  started_at: iso('When it started'),
  finished_at: iso('When it ended').nullable(),
  duration_ms: z.number().int().min(0).describe('How long it ran (so far)'),
  exit_code: z.number().int().nullable().describe('Exit code once ended by itself, else null'),
  signal: z.string().nullable().describe('The signal that ended it, or null'),
  stdout: z.string().describe('The tail of stdout (once ended)'),
  stderr: z.string().describe('The tail of stderr (once ended)'),
  stdout_truncated: z.boolean().describe('True when bytes before the stdout tail were dropped'),
  stderr_truncated: z.boolean().describe('True when bytes before the stderr tail were dropped'),
  artifacts,
  output_errors: outputErrors,
  error: failure,
};
const TaskStatusResult = z.strictObject({
  ...taskView,
  endpoints: z
    .array(
      z.strictObject({
        ...endpoint,
        active: z.boolean().describe('True while the service runs and the port answers'),
      }),
    )
    .describe("A service's endpoints (no tokens); empty for a command"),
});
const watchTimedOut = z
  .boolean()
  .describe('True when timeout_ms passed before it ended (the state is then not final)');
const canceled = z
  .boolean()
  .describe('True when this call ended it; false when it had already ended');

const jobView = {
  job_id: z.string().describe('The job'),
  status: z.enum(runStatus).describe('Its state'),
  sandbox_id: z.string().describe('The sandbox its steps run in'),
  started_at: iso('When it started'),
  finished_at: iso('When it ended').nullable(),
  duration_ms: z.number().int().min(0).describe('How long it ran (so far)'),
  steps: z
    .array(
      z.strictObject({
        index: z.number().int().min(0).describe('Its place, from 0'),
        command: z.string().describe('Its command'),
        status: z.enum([...runStatus, 'pending', 'skipped']).describe('Its state'),
        timeout_ms: z.number().int().describe('Its time limit'),
        exit_code: z.number().int().nullable().describe('Its exit code, or null'),
        signal: z.string().nullable().describe('The signal that ended it, or null'),
        stdout: z.string().describe('The tail of its stdout'),
        stderr: z.string().describe('The tail of its stderr'),
        stdout_truncated: z.boolean().describe('True when bytes before the tail were dropped'),
        stderr_truncated: z.boolean().describe('True when bytes before the tail were dropped'),
        started_at: iso('When it started').nullable(),
        finished_at: iso('When it ended').nullable(),
        duration_ms: z.number().int().min(0).nullable().describe('How long it ran, or null'),
      }),
    )
    .describe('Every step, in order'),
  error: failure,
};

const fileInfo = {
  path: z.string().describe('The normalised path, from the root (`/notes/todo.md`)'),
  size: z.number().int().min(0).describe('Its size in bytes (UTF-8)'),
};
const document = {
  id: z.string().describe('The document id'),
  collection: z.string().describe('Its collection'),
  title: z.string().describe('Its title'),
  metadata: z.record(z.string(), z.unknown()).describe('Its metadata, as loaded'),
};

/** Result schema per reserved tool, by full name. */
export const RESULTS: Readonly<Record<string, z.ZodType>> = Object.freeze({
  'skills.load': LoadResult,
  'skills.activate': ActivateResult,
  'skills.run_cmd': RunCmdResult,
  'skills.run_cmd_async': z.strictObject(started),
  'skills.run_service': RunServiceResult,
  'skills.start_job': z.strictObject({
    job_id: z.string().describe('Id for job_status, job_watch and job_cancel'),
    status: z.literal('running').describe('Always `running`: the call returns once it started'),
    started_at: iso('When it started'),
  }),
  'skills.job_status': z.strictObject(jobView),
  'skills.job_watch': z.strictObject({ ...jobView, watch_timed_out: watchTimedOut }),
  'skills.job_cancel': z.strictObject({ ...jobView, canceled }),
  'skills.task_status': TaskStatusResult,
  'skills.task_watch': z.strictObject({ ...taskView, watch_timed_out: watchTimedOut }),
  'skills.task_cancel': z.strictObject({ ...taskView, canceled }),
  'builtin.echo': z.record(z.string(), z.unknown()).describe('The arguments, unchanged'),
  'builtin.sleep': z.strictObject({
    slept_ms: z.number().int().min(0).describe('How long it slept'),
  }),
  'builtin.execute_python': z.strictObject(execOutput),
  'builtin.read_file': z.strictObject({
    ...fileInfo,
    content: z.string().describe('Its content'),
    updated_at: iso('When it was last written'),
  }),
  'builtin.write_file': z.strictObject({
    ...fileInfo,
    created: z.boolean().describe('True when the file is new, false when it was replaced'),
  }),
  'builtin.list_files': z.strictObject({
    path: z.string().describe('The folder listed, normalised'),
    files: z
      .array(z.strictObject({ ...fileInfo, updated_at: iso('When it was last written') }))
      .describe('The files under it, at most 1000'),
    truncated: z.boolean().describe('True when there were more than 1000'),
  }),
  'builtin.search_documents': z.strictObject({
    query: z.string().describe('The query, as given'),
    results: z
      .array(
        z.strictObject({
          ...document,
          snippet: z.string().describe('Where it matches, the matching words in <mark>'),
          rank: z.number().min(0).describe('Relevance (higher is better), 4 decimals'),
        }),
      )
      .describe('The best matches first'),
  }),
  'builtin.get_document': z.strictObject({
    ...document,
    body: z.string().describe('Its whole body'),
    updated_at: iso('When it was last loaded'),
  }),
});
