export { runService, createServiceLogger, redactingLoggerOptions } from './run.ts';
export type { Running, RunOptions } from './run.ts';
export {
  instanceIdOf,
  connectNatsFromConfig,
  createStoreFromConfig,
  createArtifactStoreFromConfig,
  createE2bProviderFromConfig,
  e2bOptionsFromConfig,
  createSandboxProviderFromConfig,
  streamSettingsOf,
} from './connect.ts';
export { startHealthServer } from './health.ts';
export type { HealthReport, HealthServer } from './health.ts';
