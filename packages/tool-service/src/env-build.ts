// The build job behind an installed environment (a skill's dependencies, an MCP server's npm
// package): one row of state.skill_envs per key. Locally, the first request claims the row and
// installs in a sandbox of its own; any other request, on any instance, waits on the row, and a
// builder that stops renewing its lease is taken over. On e2b every sandbox is a VM of its own,
// so the install runs in the caller's sandbox and the row only records the last outcome.
// What differs between environments (files, installer, hosts, errors, log wording) is the job.
import type { Logger } from 'pino';
import type { ToolError } from '@toolmesh/protocol';
import type { ExecResult, Sandbox, SandboxProvider } from '@toolmesh/sandbox';
import type { SkillEnvKey, SkillEnvRecord, SkillEnvsRepo } from '@toolmesh/store';

const TAIL_BYTES = 8 * 1024;
const POLL_MS = 250;

export interface EnvBuildDeps {
  envs: SkillEnvsRepo;
  provider: SandboxProvider;
  instanceId: string;
  buildTimeoutMs: number;
  leaseMs: number;
}

export interface EnvBuildJob {
  key: SkillEnvKey;
  kinds: readonly string[];
  /** The agent part of the local build sandbox's key. */
  agent: string;
  /** Hosts the local build sandbox may reach. */
  hosts: readonly string[];
  /** Fixed shell text run in the sandbox; every value reaches it through `vars` or files. */
  script: string;
  /** The installer's variables for a build in `dir` (workdir-relative, `.` for the workdir). */
  vars(dir: string): Record<string, string>;
  /** Puts the installer's input files under `dir`. */
  putFiles(sandbox: Sandbox, dir: string): Promise<void>;
  /** Credentials masked in the output tail. */
  secrets: readonly string[];
  /** What a failed row answers. */
  failure(row: Pick<SkillEnvRecord, 'output_tail' | 'error'>): ToolError;
  /** What a request answers when its deadline passes while someone else builds. */
  stillBuilding(): ToolError;
  /** The error of a build whose row someone else took over. */
  takenOver(): ToolError;
  deadline: number;
  signal?: AbortSignal;
  logger: Logger;
  log: {
    building: string;
    /** Whether the `building` line carries the row's kinds. */
    buildingKinds?: boolean;
    built: string;
    removeFailed: string;
  };
}

/** A URL's host, with its port when it has one (a sandbox's allowed domain). */
export function hostOf(url: string): string {
  const u = new URL(url);
  return u.port ? `${u.hostname}:${u.port}` : u.hostname;
}

/** The passwords in URLs (a private mirror's user:token), as written and decoded. */
export function urlSecrets(urls: readonly string[]): string[] {
  const found: string[] = [];
  for (const url of urls) {
    const u = new URL(url);
    for (const part of [u.password, decodeURIComponent(u.password)]) {
      if (part.length > 0) found.push(part);
    }
  }
  return found;
}

/** The installer's last output with the secrets masked: it reaches cards and the api. */
function tailOf(r: ExecResult, secrets: readonly string[]): string {
  let text = `${r.stdout.text}${r.stderr.text ? `\n${r.stderr.text}` : ''}`;
  for (const secret of secrets) text = text.split(secret).join('****');
  return text.length > TAIL_BYTES ? text.slice(text.length - TAIL_BYTES) : text;
}

/** Waits for (or builds) the ready row of a local environment. */
export async function readyEnvRow(deps: EnvBuildDeps, job: EnvBuildJob): Promise<SkillEnvRecord> {
  let seen = await deps.envs.get(job.key);
  // Set once this request has waited on someone else's build: that build's failure is then
  // this request's answer (a failure from before it arrived is built again instead).
  let waited = false;
  for (;;) {
    if (seen?.status === 'ready') return seen;
    if (seen?.status === 'failed' && waited) throw job.failure(seen);
    if (seen === undefined || seen.status === 'failed' || seen.lease_until.getTime() < Date.now()) {
      const claimed = await deps.envs.claim(job.key, job.kinds, deps.instanceId, deps.leaseMs);
      if (claimed) return build(deps, job, claimed);
    }
    waited = true;
    if (job.signal?.aborted) throw job.signal.reason as Error;
    if (Date.now() > job.deadline) throw job.stillBuilding();
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    seen = await deps.envs.get(job.key);
  }
}

async function build(
  deps: EnvBuildDeps,
  job: EnvBuildJob,
  claimed: SkillEnvRecord,
): Promise<SkillEnvRecord> {
  const { envs, instanceId, leaseMs } = deps;
  const { key, logger: log } = job;
  log.info(
    job.log.buildingKinds
      ? { builds: claimed.builds, kinds: claimed.kinds }
      : { builds: claimed.builds },
    job.log.building,
  );
  const renew = setInterval(
    () => {
      envs
        .renew(key, instanceId, leaseMs)
        .catch((err: unknown) => log.warn({ err }, 'renewing a build lease failed'));
    },
    Math.max(500, Math.floor(leaseMs / 3)),
  );
  let sandbox: Sandbox | undefined;
  try {
    sandbox = await deps.provider.create({
      key: { project: key.projectId, agent: job.agent, session: key.version.slice(0, 32) },
      network: { allowedDomains: [...job.hosts] },
    });
    const location = `${sandbox.workdir}/env`;
    await envs.setSandbox(key, instanceId, sandbox.id, location);
    await job.putFiles(sandbox, '.');
    const result = await sandbox.exec(
      { shell: job.script },
      {
        env: job.vars('.'),
        timeoutMs: deps.buildTimeoutMs,
        limits: { stdoutBytes: TAIL_BYTES, stderrBytes: TAIL_BYTES },
      },
    );
    const ok = result.exitCode === 0 && !result.timedOut;
    const done = await envs.finish(key, instanceId, {
      status: ok ? 'ready' : 'failed',
      outputTail: tailOf(result, job.secrets),
      error: ok
        ? null
        : {
            message: result.timedOut
              ? `the installer ran past ${deps.buildTimeoutMs} ms`
              : `the installer exited with ${result.exitCode ?? result.signal}`,
            exit_code: result.exitCode,
            timed_out: result.timedOut,
          },
    });
    if (!done) throw job.takenOver();
    log.info({ status: done.status, durationMs: Math.round(result.durationMs) }, job.log.built);
    if (!ok) {
      await sandbox.destroy().catch((err: unknown) => log.warn({ err }, job.log.removeFailed));
      sandbox = undefined;
      throw job.failure(done);
    }
    await sandbox.close();
    return done;
  } catch (err) {
    // The row stays `building` until its lease passes unless it was finished above; a failure
    // of our own before the install (the provider refused a sandbox) is recorded now.
    const row = await envs.get(key).catch(() => undefined);
    if (row?.status === 'building' && row.owner_instance === instanceId) {
      await envs
        .finish(key, instanceId, {
          status: 'failed',
          outputTail: '',
          error: { message: err instanceof Error ? err.message : String(err) },
        })
        .catch(() => undefined);
      await sandbox?.destroy().catch(() => undefined);
    }
    throw err;
  } finally {
    clearInterval(renew);
  }
}

/**
 * e2b: installs into the caller's own `sandbox` under `dir` unless its `env/.ready` marker is
 * there. Rows record the last build; sandboxes do not wait on each other (each is its own VM).
 */
export async function buildEnvInSandbox(
  deps: EnvBuildDeps,
  job: EnvBuildJob,
  sandbox: Sandbox,
  dir: string,
): Promise<void> {
  const ready = await sandbox.getFile(`${dir}/env/.ready`).then(
    () => true,
    () => false,
  );
  if (ready) return;
  const { envs, instanceId } = deps;
  await envs.claim(job.key, job.kinds, instanceId, deps.leaseMs).catch(() => undefined);
  await job.putFiles(sandbox, dir);
  const result = await sandbox.exec(
    { shell: job.script },
    {
      env: job.vars(dir),
      timeoutMs: Math.max(1, Math.min(deps.buildTimeoutMs, job.deadline - Date.now())),
      ...(job.signal ? { signal: job.signal } : {}),
      limits: { stdoutBytes: TAIL_BYTES, stderrBytes: TAIL_BYTES },
    },
  );
  const ok = result.exitCode === 0 && !result.timedOut;
  const end = {
    status: ok ? ('ready' as const) : ('failed' as const),
    outputTail: tailOf(result, job.secrets),
    error: ok
      ? null
      : {
          message: `the installer exited with ${result.exitCode ?? result.signal}`,
          exit_code: result.exitCode,
          timed_out: result.timedOut,
        },
  };
  await envs.finish(job.key, instanceId, end).catch(() => undefined);
  if (!ok) throw job.failure({ output_tail: end.outputTail, error: end.error });
}
