export { runService } from './run.ts';
export type { Running, RunOptions } from './run.ts';
export {
  instanceIdOf,
  connectNatsFromConfig,
  createStoreFromConfig,
  createArtifactStoreFromConfig,
  createSandboxProviderFromConfig,
  streamSettingsOf,
} from './connect.ts';
