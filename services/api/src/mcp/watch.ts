// What a client asked to be notified of: resource subscriptions and its log level. A 2025-era
// session keeps them (SessionWatch) for its life; a 2026-07-28 `subscriptions/listen` stream
// names its resources in the request and holds them while it is open.
//
// The upstream connection is shared by every session of the project, so the mesh never lets one
// client's choice change what another is sent:
// - a subscribe goes to the server (the tools service counts them per connection and passes on
//   an unsubscribe only when no session holds the URI); the api sends a resource's updates only
//   to the sessions that subscribed to it;
// - `logging/setLevel` sets the server's level to `debug` and keeps the client's own level here;
//   each session is sent the messages at or above its level (`info` until it sets one). Log
//   messages of a call go to the call's client only, filtered the same way.
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  SetLevelRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js';
import type { RegistryStore } from '@toolmesh/store';
import type { Federation } from './federated.ts';
import { DEFAULT_LOG_LEVEL } from './notices.ts';
import type { Upstream } from './upstream.ts';

/** What one 2025-era session asked to be notified of. */
export interface SessionWatch {
  /** Resource URIs it subscribed to, as its client names them. */
  readonly resources: Set<string>;
  /** Its log level: messages below it are not sent. */
  level: string;
}

export const createSessionWatch = (): SessionWatch => ({
  resources: new Set(),
  level: DEFAULT_LOG_LEVEL,
});

/** The mesh's own resources never change: a subscription to one is kept and never notified. */
const ARTIFACT_URI = 'toolmesh://artifacts/';

export function createWatches(deps: {
  store: RegistryStore;
  upstream: Upstream;
  federation: Federation;
}) {
  const { upstream, federation } = deps;

  /** The server holding a resource a client names on an endpoint (undefined: an artifact). */
  async function locate(
    project: string,
    endpoint: string | undefined,
    uri: string,
  ): Promise<{ server: string; uri: string } | undefined> {
    if (uri.startsWith(ARTIFACT_URI)) return undefined;
    if (endpoint !== undefined) return { server: endpoint, uri };
    return federation.locate(project, uri);
  }

  async function subscribe(project: string, endpoint: string | undefined, uri: string) {
    const at = await locate(project, endpoint, uri);
    if (at) await upstream.request(project, at.server, 'resources/subscribe', { uri: at.uri });
  }

  async function unsubscribe(project: string, endpoint: string | undefined, uri: string) {
    const at = await locate(project, endpoint, uri);
    if (at) await upstream.request(project, at.server, 'resources/unsubscribe', { uri: at.uri });
  }

  /** Sets the server's (or, on the facade, every server's) level to `debug`. */
  async function openLogs(project: string, endpoint: string | undefined): Promise<void> {
    if (endpoint !== undefined) {
      await upstream.request(project, endpoint, 'logging/setLevel', { level: 'debug' });
      return;
    }
    // The facade: each enabled server that has logging; one without it is left out.
    const servers = (await deps.store.mcpServers.list(project)).filter((s) => s.enabled);
    await Promise.all(
      servers.map((s) =>
        upstream
          .request(project, s.name, 'logging/setLevel', { level: 'debug' })
          .catch(() => undefined),
      ),
    );
  }

  return {
    /** resources/subscribe|unsubscribe and logging/setLevel of a 2025-era session. */
    register(server: Server, project: string, endpoint: string | undefined, watch: SessionWatch) {
      server.setRequestHandler(SubscribeRequestSchema, async (req) => {
        await subscribe(project, endpoint, req.params.uri);
        watch.resources.add(req.params.uri);
        return {};
      });
      server.setRequestHandler(UnsubscribeRequestSchema, async (req) => {
        // Only what this session holds: another session's subscription is not its to end.
        if (!watch.resources.delete(req.params.uri)) return {};
        await unsubscribe(project, endpoint, req.params.uri);
        return {};
      });
      server.setRequestHandler(SetLevelRequestSchema, async (req) => {
        // Set first: what the server says while its level changes is already filtered.
        const before = watch.level;
        watch.level = req.params.level;
        try {
          await openLogs(project, endpoint);
        } catch (err) {
          watch.level = before;
          throw err;
        }
        return {};
      });
    },

    /** A closed session's subscriptions end (best effort: the server may be gone). */
    release(project: string, endpoint: string | undefined, watch: SessionWatch): void {
      for (const uri of watch.resources) {
        unsubscribe(project, endpoint, uri).catch(() => undefined);
      }
      watch.resources.clear();
    },

    /**
     * The resources a `subscriptions/listen` stream names are subscribed to while it is open;
     * the returned function ends them. A URI the endpoint cannot reach is left out.
     */
    listen(project: string, endpoint: string | undefined, uris: readonly string[]): () => void {
      const held = Promise.all(
        uris.map((uri) =>
          subscribe(project, endpoint, uri).then(
            () => uri,
            () => undefined,
          ),
        ),
      );
      return () => {
        void held.then((ok) => {
          for (const uri of ok) {
            if (uri !== undefined) unsubscribe(project, endpoint, uri).catch(() => undefined);
          }
        });
      };
    },

    /** A 2026-07-28 `logging/setLevel`: no session keeps it; a request's `_meta` level filters. */
    async setLevel(project: string, endpoint: string | undefined): Promise<Record<string, never>> {
      await openLogs(project, endpoint);
      return {};
    },
  };
}
export type Watches = ReturnType<typeof createWatches>;
