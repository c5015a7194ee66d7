// The registry as tool services see it: resource.tools rows, cached per project and name
// (misses too, so a storm of calls to an unknown tool costs one query). The tools service
// resolves every call through it; a static service (skills) asks it whether a tool is disabled. A change event from the
// api (`evt.sys.registry.changed`) drops the entries it names; a short TTL heals a missed event.
// A lookup that raced an invalidation is not cached, so a stale row cannot outlive its event.
import type { Logger } from 'pino';
import type { Bus } from '@toolmesh/bus';
import { decodeMessage } from '@toolmesh/protocol';
import type { RegistryStore, ToolOrigin, ToolRecord } from '@toolmesh/store';

export interface RegistryTool {
  readonly project: string;
  /** The full name, `<target>.<tool>`. */
  readonly name: string;
  readonly toolId: string;
  /** Changes whenever the row does: compiled schemas are cached under toolId + version. */
  readonly version: string;
  readonly origin: ToolOrigin;
  readonly enabled: boolean;
  /** A changed definition waits for approval: calls fail definition_changed. */
  readonly held: boolean;
  readonly parameters: Record<string, unknown>;
  readonly spec: Record<string, unknown>;
  readonly options: Record<string, unknown>;
  /** Deprecated: still runs, and its cards carry a deprecation note. */
  readonly deprecated: boolean;
  readonly deprecationMessage: string | null;
  /** The version of the API or server the tool came from (not the row's `version` above). */
  readonly apiVersion: string | null;
}

export interface Registry {
  get(project: string, name: string): Promise<RegistryTool | undefined>;
  /** Drops cached entries: the named tools of a project, or all of its tools. */
  invalidate(project: string, names?: readonly string[]): void;
  close(): void;
}

export interface RegistryOptions {
  store: RegistryStore;
  bus: Bus;
  ttlMs: number;
  logger: Logger;
  /** Most entries kept; the oldest go first. */
  maxEntries?: number;
}

const toTool = (r: ToolRecord): RegistryTool => ({
  project: r.project_id,
  name: r.name,
  toolId: r.tool_id,
  version: r.updated_at.toISOString(),
  origin: r.origin,
  enabled: r.enabled,
  held: r.pending_definition !== null,
  parameters: r.parameters,
  spec: r.spec,
  options: r.options,
  deprecated: r.deprecated,
  deprecationMessage: r.deprecation_message,
  apiVersion: r.version,
});

export function createRegistry(o: RegistryOptions): Registry {
  const log = o.logger.child({ component: 'registry' });
  const max = o.maxEntries ?? 10_000;
  const cache = new Map<string, { tool: RegistryTool | undefined; at: number }>();
  const pending = new Map<string, Promise<RegistryTool | undefined>>();
  /** Bumped on every invalidation: a lookup started before one is not cached. */
  let epoch = 0;
  const keyOf = (project: string, name: string) => `${project}\u0000${name}`;

  const invalidate = (project: string, names?: readonly string[]) => {
    epoch++;
    pending.clear();
    if (names && names.length > 0) {
      for (const n of names) cache.delete(keyOf(project, n));
      return;
    }
    const prefix = `${project}\u0000`;
    for (const k of cache.keys()) if (k.startsWith(prefix)) cache.delete(k);
  };

  const sub = o.bus.subscribe(o.bus.subjects.registryChangedFilter(), (subject, data) => {
    try {
      const { project } = o.bus.subjects.parse(subject);
      const evt = decodeMessage('registry_changed', data);
      invalidate(project, evt.tools);
      log.debug({ project, change: evt.change, tools: evt.tools }, 'registry changed');
    } catch (err) {
      log.warn({ err, subject }, 'ignoring a malformed registry event');
    }
  });

  async function load(
    project: string,
    name: string,
    key: string,
  ): Promise<RegistryTool | undefined> {
    const started = epoch;
    const row = await o.store.tools.get(project, name);
    const tool = row ? toTool(row) : undefined;
    if (epoch === started) {
      cache.delete(key);
      cache.set(key, { tool, at: Date.now() });
      if (cache.size > max) cache.delete(cache.keys().next().value!);
    }
    return tool;
  }

  return {
    get: (project, name) => {
      const key = keyOf(project, name);
      const hit = cache.get(key);
      if (hit && Date.now() - hit.at < o.ttlMs) return Promise.resolve(hit.tool);
      let p = pending.get(key);
      if (!p) {
        const loading = load(project, name, key).finally(() => {
          if (pending.get(key) === loading) pending.delete(key);
        });
        pending.set(key, loading);
        p = loading;
      }
      return p;
    },
    invalidate,
    close: () => sub.unsubscribe(),
  };
}
