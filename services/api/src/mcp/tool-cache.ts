// The registry rows a facade `tools/call` resolves, cached per project and tool name, with the
// tool services' rule (packages/tool-service/src/registry.ts): a registry change event
// (`evt.sys.registry.changed`, published and flushed by the route that made the change) drops
// the entries it names, and [tools] registry_cache_ttl_ms heals a missed event. The tool service
// that runs the call trusts its own cache as long, so the facade sees no older registry than the
// mesh does. A lookup that raced an invalidation is not kept. Only rows are kept, not misses: a
// tool registered a moment ago is found at once, whatever event it waits for.
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { subscribeGuarded } from '@toolmesh/bus';
import type { Subjects } from '@toolmesh/protocol';
import type { RegistryStore, ToolRecord } from '@toolmesh/store';
import { decodeMessage } from '@toolmesh/protocol';

export interface ToolCache {
  get(project: string, name: string): Promise<ToolRecord | undefined>;
  close(): void;
}

export function createToolCache(o: {
  store: RegistryStore;
  nc: NatsConnection;
  subjects: Subjects;
  ttlMs: number;
  logger: Logger;
  /** Most rows kept; the oldest go first. */
  maxEntries?: number;
}): ToolCache {
  const max = o.maxEntries ?? 10_000;
  const cache = new Map<string, { tool: ToolRecord; at: number }>();
  /** Bumped on every invalidation: a lookup started before one is not kept. */
  let epoch = 0;
  const keyOf = (project: string, name: string) => `${project}\u0000${name}`;

  function invalidate(project: string, names: readonly string[]) {
    epoch++;
    if (names.length > 0) {
      for (const n of names) cache.delete(keyOf(project, n));
      return;
    }
    const prefix = `${project}\u0000`;
    for (const k of cache.keys()) if (k.startsWith(prefix)) cache.delete(k);
  }

  const sub = subscribeGuarded(o.nc, o.subjects.registryChangedFilter(), {
    log: o.logger,
    onMessage: (msg) => {
      try {
        const { project } = o.subjects.parse(msg.subject);
        invalidate(project, decodeMessage('registry_changed', msg.data).tools);
      } catch (e) {
        o.logger.warn({ err: e, subject: msg.subject }, 'ignoring a malformed registry event');
      }
    },
  });

  return {
    get: async (project, name) => {
      const key = keyOf(project, name);
      const hit = cache.get(key);
      if (hit && Date.now() - hit.at < o.ttlMs) return hit.tool;
      const started = epoch;
      const tool = await o.store.tools.get(project, name);
      if (epoch !== started) return tool;
      cache.delete(key);
      if (tool) {
        cache.set(key, { tool, at: Date.now() });
        if (cache.size > max) cache.delete(cache.keys().next().value!);
      }
      return tool;
    },
    close: () => sub.unsubscribe(),
  };
}
