// What the skills.* tools are built from: one object, passed down from app.ts (or a test).
import type { Logger } from 'pino';
import type { ArtifactStore } from '@toolmesh/artifacts';
import type { Bus } from '@toolmesh/bus';
import type { SandboxProvider } from '@toolmesh/sandbox';
import type { SkillZipLimits } from '@toolmesh/skills';
import type { CallsStore, SkillsStore } from '@toolmesh/store';
import type { EnvOptions } from './envs.ts';
import type { SessionOptions } from './sessions.ts';

export interface SkillsLimits {
  /** Command time limit when a call names none, and the most it may name. */
  runTimeoutDefaultMs: number;
  runTimeoutMaxMs: number;
  /** The longest an async task may run (and its limit when the call names none). */
  taskTimeoutMaxMs: number;
  /** Tails of output kept in the result. */
  stdoutTailBytes: number;
  stderrTailBytes: number;
  /** Largest single input artifact copied in, and output file collected. */
  maxInputBytes: number;
  maxOutputBytes: number;
  zip: SkillZipLimits;
}

/** Per-project quotas ([quotas]); 0 is no quota. Calls are counted by the tool runtime. */
export interface SkillsQuotas {
  sandboxesPerProject: number;
  runningTasksPerProject: number;
}

/**
 * `S`: the store domains a module uses. The skills tools as a whole use skills' own rows and the
 * quotas of sandboxes, running tasks and jobs (calls); a module that reads or writes only
 * skills' rows says `SkillsDeps<SkillsStore>`.
 */
export interface SkillsDeps<S = CallsStore & SkillsStore> {
  store: S;
  artifacts: ArtifactStore;
  sandboxes: SandboxProvider;
  /** Reuse, TTLs and locks of sandbox sessions (sandbox.* in the configuration). */
  sessions: SessionOptions;
  limits: SkillsLimits;
  quotas: SkillsQuotas;
  /** Where skill dependencies are installed from, and how long a build may take. */
  envs: EnvOptions;
  /** Task cancels reach the owning instance, and watch heartbeats leave, over the bus. */
  bus: Bus;
  /** This process: the owner recorded in the heads of the tasks it runs. */
  instanceId: string;
  logger: Logger;
}
