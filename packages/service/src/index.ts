export { runService } from './run.ts';
export type { Running, RunOptions } from './run.ts';
export {
  instanceIdOf,
  connectNatsFromConfig,
  createStoreFromConfig,
  createArtifactStoreFromConfig,
  streamSettingsOf,
} from './connect.ts';
