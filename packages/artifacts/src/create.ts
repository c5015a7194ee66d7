// Builds the artifact store a config names. The switch is exhaustive over the config union,
// so adding an adapter to the schema without wiring it here is a compile error.
import { createFsArtifactStore } from './fs.ts';
import { ArtifactStoreKind } from './store.ts';
import type { ArtifactStore, ArtifactStoreConfig } from './store.ts';

export function createArtifactStore(config: ArtifactStoreConfig): ArtifactStore {
  switch (config.kind) {
    case ArtifactStoreKind.fs:
      return createFsArtifactStore({ root: config.root });
    default: {
      const unknown: never = config.kind;
      throw new Error(`unknown artifact store kind ${String(unknown)}`);
    }
  }
}
