export { runService } from './run.ts';
export type { Running, RunOptions } from './run.ts';
export {
  instanceIdOf,
  connectNatsFromConfig,
  createStoreFromConfig,
  createArtifactStoreFromConfig,
  createE2bProviderFromConfig,
  createSandboxProviderFromConfig,
  streamSettingsOf,
} from './connect.ts';
