export { ArtifactStoreKind, ArtifactStoreConfig } from './store.ts';
export type { ArtifactStore, ArtifactStat, PutOptions, PutResult } from './store.ts';
export { createArtifactStore } from './create.ts';
export { createFsArtifactStore } from './fs.ts';
export type { FsArtifactStoreOptions } from './fs.ts';
export { createGcsArtifactStore } from './gcs.ts';
export type { GcsArtifactStoreOptions } from './gcs.ts';
export { ArtifactError, ArtifactErrorCode, artifactErrorCodeOf } from './errors.ts';
export { assertKey, assertPrefix, keyProblem, MAX_KEY_BYTES, MAX_SEGMENT_BYTES } from './key.ts';
export {
  skillZipKey,
  skillZipPrefix,
  artifactKey,
  artifactPrefix,
  sanitizeFilename,
  MAX_FILENAME_CHARS,
} from './keys.ts';
