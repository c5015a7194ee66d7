// Argument schemas of the reserved tools. An LLM writes these arguments, so every object is
// strict (a misspelt field is an error, not silently dropped), every string and array has a
// bound, and paths are workdir-relative by construction. Limits that depend on the deployment
// (the largest timeout, output sizes) are enforced again by the skills service from config;
// the bounds here are the outer ones any deployment accepts.
import { ID_PATTERN } from '@toolmesh/protocol';
import { z } from 'zod';

const id = (what: string) =>
  z
    .string()
    .regex(ID_PATTERN, 'must be 1-64 characters of [A-Za-z0-9_-]')
    .describe(`${what} (1-64 characters of [A-Za-z0-9_-])`);

export const SkillName = id('Skill name, as listed in the available skills');
export const SessionId = id(
  'Sandbox session to run in. Calls with the same session_id share one sandbox and its files; ' +
    'without it each call gets a fresh sandbox',
);
export const SkillVersion = z
  .string()
  .regex(/^[0-9a-f]{64}$/, 'must be 64 lowercase hex digits')
  .describe('A skill version (the sha256 of its zip); the active version when omitted');

/**
 * A path inside the workdir: relative, no `..` segment, no empty segment or trailing `/`, no
 * backslash or control characters. A regex (not a refine) so the JSON Schema says it too, and
 * one without lookahead: tenants' clients and the api check schemas with RE2, which has none.
 * A segment is any run of allowed characters but `..`: one character, two that are not both
 * dots, or three and more.
 */
const PATH_CHAR = '[^/\\\\\\u0000-\\u001f\\u007f]';
const PATH_CHAR_NOT_DOT = '[^./\\\\\\u0000-\\u001f\\u007f]';
const SEGMENT = `(?:${PATH_CHAR}|${PATH_CHAR_NOT_DOT}${PATH_CHAR}|\\.${PATH_CHAR_NOT_DOT}|${PATH_CHAR}{3,})`;
export const RELATIVE_PATH_PATTERN = new RegExp(`^${SEGMENT}(?:/${SEGMENT})*$`);
export const MAX_PATH_CHARS = 1024;
const relativePath = (what: string) =>
  z
    .string()
    .min(1)
    .max(MAX_PATH_CHARS)
    .regex(
      RELATIVE_PATH_PATTERN,
      'must be a relative path inside the workdir (no .., no leading /)',
    )
    .describe(what);

export const MAX_COMMAND_CHARS = 16 * 1024;
const command = z
  .string()
  .min(1)
  .max(MAX_COMMAND_CHARS)
  .describe('Shell command line, run with bash -c in the workdir');

export const ENV_NAME_PATTERN = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const MAX_ENV_VARS = 64;
export const Env = z
  .record(
    z.string().max(128).regex(ENV_NAME_PATTERN, 'must match [A-Za-z_][A-Za-z0-9_]*'),
    // NUL cannot be carried in an environment variable.
    z
      .string()
      .max(32 * 1024)
      .regex(/^[^\0]*$/, 'must not contain NUL'),
  )
  .refine((env) => Object.keys(env).length <= MAX_ENV_VARS, {
    message: `at most ${MAX_ENV_VARS} variables`,
  })
  // Refinements do not reach the JSON Schema; the same bound is stated there by hand.
  .meta({ maxProperties: MAX_ENV_VARS })
  .describe('Environment variables for the command; values reach it verbatim');

const HOUR_MS = 3_600_000;
const timeoutMs = (max: number, what: string) =>
  z.number().int().min(1).max(max).describe(`${what} (milliseconds, 1-${max})`);

export const Input = z.strictObject({
  artifact_id: id('Artifact to mount'),
  path: relativePath('Where the artifact appears, relative to the workdir'),
});

const MAX_FILES = 32;
const inputs = z
  .array(Input)
  .max(MAX_FILES)
  .describe('Artifacts copied into the workdir before the command runs');
const outputs = z
  .array(relativePath('A file the command writes, relative to the workdir'))
  .max(MAX_FILES)
  .describe('Files collected after the command ends; each becomes an artifact');
const workdir = relativePath(
  "Folder to run in, relative to the session root; with `skill`, the skill's folder skills/<name>",
);

const commandFields = {
  skill: SkillName.optional(),
  command,
  env: Env.optional(),
  session_id: SessionId.optional(),
  inputs: inputs.optional(),
  outputs: outputs.optional(),
  workdir: workdir.optional(),
};

export const LoadArgs = z.strictObject({
  skill: SkillName,
  version: SkillVersion.optional(),
  session_id: SessionId.describe(
    'Sandbox session to place the skill in (its files at skills/<name>/, its dependencies ' +
      'installed); without it nothing is placed (1-64 characters of [A-Za-z0-9_-])',
  ).optional(),
});
export type LoadArgs = z.infer<typeof LoadArgs>;

export const ActivateArgs = z.strictObject({
  skill: SkillName,
  version: SkillVersion.optional(),
  session_id: SessionId.optional(),
});
export type ActivateArgs = z.infer<typeof ActivateArgs>;

export const RunCmdArgs = z.strictObject({
  ...commandFields,
  timeout_ms: timeoutMs(HOUR_MS, 'Time limit; the command is killed after it').optional(),
});
export type RunCmdArgs = z.infer<typeof RunCmdArgs>;

export const RunCmdAsyncArgs = z.strictObject({
  ...commandFields,
  timeout_ms: timeoutMs(24 * HOUR_MS, 'Time limit; the task is killed after it').optional(),
});
export type RunCmdAsyncArgs = z.infer<typeof RunCmdAsyncArgs>;

export const MAX_EXPOSED_PORTS = 8;
export const RunServiceArgs = z.strictObject({
  ...commandFields,
  // A service outlives its call; without a session nothing could reach it again.
  session_id: SessionId,
  timeout_ms: timeoutMs(24 * HOUR_MS, 'Lifetime; the service is stopped after it').optional(),
  expose_ports: z
    .array(z.number().int().min(1).max(65535))
    .max(MAX_EXPOSED_PORTS)
    .refine((ports) => new Set(ports).size === ports.length, { message: 'ports must be unique' })
    .meta({ uniqueItems: true })
    .describe('TCP ports the service listens on inside the sandbox, forwarded to 127.0.0.1')
    .optional(),
  ready_timeout_ms: timeoutMs(
    5 * 60_000,
    'How long the service has to listen on every exposed port; default 30000',
  ).optional(),
});
export type RunServiceArgs = z.infer<typeof RunServiceArgs>;

export const MAX_JOB_STEPS = 20;
export const JobStep = z.strictObject({
  command,
  timeout_ms: timeoutMs(24 * HOUR_MS, 'Time limit of this step').optional(),
  env: Env.optional(),
});
export const StartJobArgs = z.strictObject({
  steps: z
    .array(JobStep)
    .min(1)
    .max(MAX_JOB_STEPS)
    .describe('Commands run one after another; the job stops at the first failing step'),
  session_id: SessionId.optional(),
  skill: SkillName.optional(),
});
export type StartJobArgs = z.infer<typeof StartJobArgs>;

const taskId = id('Task id returned by run_cmd_async or run_service');
const jobId = id('Job id returned by start_job');
const watchFields = {
  timeout_ms: timeoutMs(HOUR_MS, 'How long to watch before returning the current state').optional(),
  heartbeat_ms: z
    .number()
    .int()
    .min(1000)
    .max(60_000)
    .describe('Interval of progress events while watching (milliseconds, 1000-60000)')
    .optional(),
};

export const TaskRef = z.strictObject({ task_id: taskId });
export type TaskRef = z.infer<typeof TaskRef>;
export const TaskWatchArgs = z.strictObject({ task_id: taskId, ...watchFields });
export type TaskWatchArgs = z.infer<typeof TaskWatchArgs>;
export const JobRef = z.strictObject({ job_id: jobId });
export type JobRef = z.infer<typeof JobRef>;
export const JobWatchArgs = z.strictObject({ job_id: jobId, ...watchFields });
export type JobWatchArgs = z.infer<typeof JobWatchArgs>;

export const EchoArgs = z
  .record(z.string(), z.unknown())
  .describe('Any object; it is returned unchanged');
export type EchoArgs = z.infer<typeof EchoArgs>;
export const SleepArgs = z.strictObject({
  ms: z.number().int().min(0).max(HOUR_MS).describe('How long to sleep, in milliseconds'),
});
export type SleepArgs = z.infer<typeof SleepArgs>;
