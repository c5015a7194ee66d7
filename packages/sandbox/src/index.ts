export type {
  BackgroundProcess,
  CommandSpec,
  CreateSandboxOptions,
  ExecLimits,
  ExecOptions,
  ExecResult,
  InteractiveOptions,
  InteractiveProcess,
  GetFileOptions,
  OutputTail,
  Sandbox,
  SandboxDenial,
  SandboxNetworkPolicy,
  SandboxProvider,
  SessionKey,
  SpawnOptions,
} from './provider.ts';
export { DenialKind, LimitExceeded } from './provider.ts';
export { SandboxError, SandboxErrorReason, isSandboxError } from './errors.ts';
export {
  createLocalSandboxProvider,
  DEFAULT_CPU_PERCENT,
  DEFAULT_DISK_BYTES,
  DEFAULT_LIMITS,
  DEFAULT_MEMORY_BYTES,
  ProcessLimitMode,
  ResourceLimitMode,
} from './local.ts';
export { DEFAULT_SANDBOX_USER } from './sandbox-user.ts';
export type { SandboxUser } from './sandbox-user.ts';
export { ETC_READ_PATHS, SYSTEM_READ_PATHS } from './read-policy.ts';
export type { LocalSandboxOptions, LocalSandboxProvider } from './local.ts';
export { createE2bSandboxProvider } from './e2b.ts';
export type { E2bSandboxOptions, E2bSandboxProvider } from './e2b.ts';
export { ConnectSupport, describeProbe, probeE2bConnect } from './e2b-probe.ts';
export type { E2bConnectProbe, ProbeOptions } from './e2b-probe.ts';
export { BARE_BWRAP_TRUE_ARGV, bareBwrapTrue } from './bare.ts';
export { netnsPidOf } from './netns.ts';
export { createLocalSandboxReaper } from './local-reap.ts';
export type { LocalReapOptions, LocalSandboxReaper, RecordedProcess } from './local-reap.ts';
export { isOurProcess, readProc, SANDBOX_COMMAND } from './proc-proof.ts';
export type { ProcInfo } from './proc-proof.ts';
export { SANDBOX_PATH } from './launch.ts';
