// Tells the tool services that tools of a project changed, so their cached registry entries go
// at once instead of at the end of their TTL. Published on core NATS and flushed before the
// route answers: a call the client publishes after the answer reaches the server after the event.
// A lost event is not fatal: the services' cache TTL ([tools] registry_cache_ttl_ms) heals it.
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { createSubjects, encodeMessage, type RegistryChange } from '@toolmesh/protocol';

const FLUSH_WAIT_MS = 1_000;

export interface RegistryEvents {
  /** `server`: the MCP server of a `server_disabled` change. */
  changed(project: string, change: RegistryChange, tools: string[], server?: string): Promise<void>;
}

export function createRegistryEvents(
  nc: NatsConnection,
  root: string,
  log: Logger,
): RegistryEvents {
  const subjects = createSubjects(root);
  return {
    changed: async (project, change, tools, server) => {
      try {
        nc.publish(
          subjects.registryChanged(project),
          encodeMessage('registry_changed', {
            v: 1,
            change,
            tools,
            ...(server ? { server } : {}),
          }),
        );
        // Bounded: with NATS away the answer must not hang; the services' TTL covers the gap.
        await Promise.race([
          nc.flush(),
          new Promise<void>((resolve) => setTimeout(resolve, FLUSH_WAIT_MS).unref()),
        ]);
      } catch (err) {
        log.warn({ err, project, change, tools }, 'could not publish a registry change');
      }
    },
  };
}
