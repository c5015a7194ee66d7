// The providers a reaper destroys sandboxes through, one per `provider` column value. Built from
// the configuration in this one function: plugging in another provider (e2b) is one line here.
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '@toolmesh/config';
import { createLocalSandboxReaper, type SandboxProvider } from '@toolmesh/sandbox';
import type { Store } from '@toolmesh/store';

/** What the reaper needs of a provider: destroy by id. A full SandboxProvider fits. */
export interface SandboxDestroyer {
  readonly kind: SandboxProvider['kind'];
  destroy(sandboxId: string): Promise<void>;
  close(): Promise<void>;
}

export type Destroyers = ReadonlyMap<SandboxDestroyer['kind'], SandboxDestroyer>;

export async function destroyersFromConfig(
  config: Config,
  store: Store,
  logger: Logger,
): Promise<Destroyers> {
  const local = await createLocalSandboxReaper({
    rootDir: resolve(config.sandbox.root_dir),
    // Background commands of running tasks and jobs, proven by pid, start time and command line.
    processesOf: async (id) =>
      (await store.sandboxReap.processesOf(id)).map((p) => ({
        pid: p.pid,
        procStartTime: p.proc_start_time,
      })),
    logger,
  });
  return new Map<SandboxDestroyer['kind'], SandboxDestroyer>([[local.kind, local]]);
}
