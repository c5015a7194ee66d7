// The providers a reaper destroys sandboxes through, one per `provider` column value. Built from
// the configuration in this one function.
import { resolve } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '@toolmesh/config';
import { createLocalSandboxReaper, type SandboxProvider } from '@toolmesh/sandbox';
import { createE2bProviderFromConfig } from '@toolmesh/service';
import type { SkillsStore } from '@toolmesh/store';

/** What the reaper needs of a provider: destroy by id. A full SandboxProvider fits. */
export interface SandboxDestroyer {
  readonly kind: SandboxProvider['kind'];
  destroy(sandboxId: string): Promise<void>;
  /** Ends what dead instances of the provider left running (local: bridges, orphaned bwraps). */
  sweep?(): Promise<number>;
  close(): Promise<void>;
}

export type Destroyers = ReadonlyMap<SandboxDestroyer['kind'], SandboxDestroyer>;

export async function destroyersFromConfig(
  config: Config,
  store: SkillsStore,
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
  const all = new Map<SandboxDestroyer['kind'], SandboxDestroyer>([[local.kind, local]]);
  // E2B sandboxes are reaped whenever an account is configured, whatever the default provider:
  // rows made before a switch of provider still have to go.
  if (config.e2b.api_key !== '') all.set('e2b', createE2bProviderFromConfig(config, logger));
  return all;
}
