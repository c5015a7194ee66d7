// Reads a project's secret for a running call: the sealed row of that project only (the project
// comes from the call's subject, never from the tool or its arguments), opened with the box.
import { ToolError } from '@toolmesh/protocol';
import type { RegistryStore, SecretBox } from '@toolmesh/store';

export interface SecretReader {
  /** Throws `secret_unavailable` when the project has no such secret or no key is set. */
  get(projectId: string, name: string): Promise<string>;
}

/** The error of a call that needs a secret its project does not have. */
export const secretMissing = (name: string): ToolError =>
  new ToolError(`secret ${JSON.stringify(name)} is not stored in this project`, {
    code: 'secret_unavailable',
    details: { secret: name },
  });

export function createSecretReader(store: RegistryStore, box: SecretBox): SecretReader {
  return {
    get: async (projectId, name) => {
      const sealed = await store.secrets.get(projectId, name);
      if (!sealed) throw secretMissing(name);
      return box.open(projectId, name, sealed);
    },
  };
}
