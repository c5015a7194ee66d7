// Builds the artifact store a config names. The switch is exhaustive over the config union,
// so adding an adapter to the schema without wiring it here is a compile error.
import { createFsArtifactStore } from './fs.ts';
import { createGcsArtifactStore } from './gcs.ts';
import { ArtifactStoreKind } from './store.ts';
import type { ArtifactStore, ArtifactStoreConfig } from './store.ts';

export function createArtifactStore(config: ArtifactStoreConfig): ArtifactStore {
  switch (config.kind) {
    case ArtifactStoreKind.fs:
      return createFsArtifactStore({ root: config.root });
    case ArtifactStoreKind.gcs:
      return createGcsArtifactStore({
        bucket: config.bucket,
        prefix: config.prefix,
        apiEndpoint: config.api_endpoint,
        projectId: config.project_id,
        credentials: config.credentials,
      });
    default: {
      const unknown: never = config;
      const { kind } = unknown as { kind?: unknown };
      throw new Error(`unknown artifact store kind ${String(kind)}`);
    }
  }
}
