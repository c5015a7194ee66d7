// A project's command stream, made as a deployment makes it: the same provisioning function the
// api runs (@toolmesh/bus provisionProjectStream) with the configuration's defaults (config.toml's
// [nats] and [quotas]; no test-only values). Tests that publish a project's commands themselves,
// as the admin user or with a project's bus credential, get the stream first, the way the api
// makes it when it creates a project or issues a bus credential.
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { projectStreamLimitsOf, provisionProjectStream } from '@toolmesh/bus';
import { loadConfig, type Config } from '@toolmesh/config';
import { createNames, createSubjects, isValidId } from '@toolmesh/protocol';
import { useStreamProvisioner } from '@toolmesh/stream-publish';

/**
 * Makes a project's command stream, with the configuration's [nats] and [quotas] (config.toml's
 * defaults unless a test's services run with another configuration, such as a cluster's
 * replicas, which it passes here as the api would have it).
 */
export type ProjectStreamMaker = (
  project: string,
  config?: Pick<Config, 'nats' | 'quotas'>,
) => Promise<void>;

/** Makes (once per project) each project's command stream through `nc`, a user with $JS.API. */
export function projectStreamMaker(nc: NatsConnection, root: string): ProjectStreamMaker {
  const defaults = loadConfig({ source: '', env: {} });
  const names = createNames(root);
  const subjects = createSubjects(root);
  const made = new Map<string, Promise<void>>();
  return (project, config = defaults) => {
    let p = made.get(project);
    if (p === undefined) {
      p = (async () =>
        provisionProjectStream(
          await jetstreamManager(nc),
          subjects,
          names,
          project,
          {
            cmdMaxAgeSec: config.nats.cmd_max_age_sec,
            dedupeWindowSec: config.nats.dedupe_window_sec,
            replicas: config.nats.replicas,
          },
          projectStreamLimitsOf(config.quotas),
        ))();
      made.set(project, p);
      p.catch(() => made.delete(project));
    }
    return p;
  };
}

/** The project of a command subject of this root; undefined for any other subject. */
export function commandProjectOf(root: string, subject: string): string | undefined {
  const t = subject.split('.');
  return t[0] === root && t[4] === 'cmd' && isValidId(t[2]) ? t[2] : undefined;
}

/**
 * A publish over `nc` to a project whose command stream does not exist yet makes it and is sent
 * again (stream-publish's provisioner), as the api's own connection does.
 */
export function provisionOnPublish(nc: NatsConnection, root: string, make: ProjectStreamMaker) {
  useStreamProvisioner(nc, async (subject) => {
    const project = commandProjectOf(root, subject);
    if (project === undefined) return false;
    await make(project);
    return true;
  });
}
