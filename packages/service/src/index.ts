export { runService } from './run.ts';
export type { Running, RunOptions } from './run.ts';
export {
  instanceIdOf,
  connectNatsFromConfig,
  createStoreFromConfig,
  streamSettingsOf,
} from './connect.ts';
