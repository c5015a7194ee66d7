// Each project's command stream, made and kept by the api (docs/protocol.md section 3): at
// project creation, when a bus credential is issued (the tenant may publish at once), when an
// admin changes the project's quotas, for every project at start (projects made before streams
// were per project, or limits changed in config.toml), and for a publish of the api's own that
// found no stream (stream-publish's provisioner). The limits are the project's own quotas, else
// [quotas] bus_*.
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { projectStreamLimitsOf, provisionProjectStream } from '@toolmesh/bus';
import type { Config } from '@toolmesh/config';
import { createNames, createSubjects, isValidId } from '@toolmesh/protocol';
import type { RegistryStore } from '@toolmesh/store';
import { useStreamProvisioner } from '@toolmesh/stream-publish';

export interface ProjectStreams {
  /** Makes the project's stream unless this process made or updated it already. */
  ensure(project: string): Promise<void>;
  /** Creates or updates the project's stream with its limits now (they may have changed). */
  apply(project: string): Promise<void>;
  /** apply() for every project; resolves with how many were applied. */
  reconcile(): Promise<number>;
}

const PAGE = 500;

export function createProjectStreams(deps: {
  nc: NatsConnection;
  config: Config;
  store: RegistryStore;
  logger: Logger;
}): ProjectStreams {
  const { config, store } = deps;
  const log = deps.logger.child({ component: 'project-streams' });
  const root = config.nats.subject_root;
  const names = createNames(root);
  const subjects = createSubjects(root);
  let jsm: Promise<JetStreamManager> | undefined;
  const made = new Map<string, Promise<void>>();

  const apply = async (project: string): Promise<void> => {
    const settings = await store.projects.settings(project);
    if (settings === undefined) throw new Error(`project ${project} does not exist`);
    jsm ??= jetstreamManager(deps.nc);
    jsm.catch(() => (jsm = undefined));
    const limits = projectStreamLimitsOf(config.quotas, settings.quotas);
    await provisionProjectStream(
      await jsm,
      subjects,
      names,
      project,
      {
        cmdMaxAgeSec: config.nats.cmd_max_age_sec,
        dedupeWindowSec: config.nats.dedupe_window_sec,
        replicas: config.nats.replicas,
      },
      limits,
    );
    log.debug({ project, limits }, 'project command stream provisioned');
  };

  // An upgrade: the one command stream of earlier releases holds every project's subjects, so no
  // project stream can be made beside it. It goes once every consumer of it has handled all it
  // holds (the services were upgraded and drained it); until then it stays, and says so.
  const retireLegacy = async (): Promise<void> => {
    jsm ??= jetstreamManager(deps.nc);
    const m = await jsm;
    const legacy = names.legacyCommandStream;
    try {
      await m.streams.info(legacy);
    } catch {
      return;
    }
    let unhandled = 0;
    for await (const c of m.consumers.list(legacy)) unhandled += c.num_pending + c.num_ack_pending;
    if (unhandled > 0) {
      log.error(
        { stream: legacy, unhandled },
        'the command stream of an earlier release still holds unhandled commands: project streams cannot be made until it is drained by the earlier services (or removed with pnpm reset-nats)',
      );
      return;
    }
    await m.streams.delete(legacy);
    log.warn({ stream: legacy }, 'removed the drained command stream of an earlier release');
  };

  const streams: ProjectStreams = {
    apply: (project) => {
      const p = apply(project);
      made.set(project, p);
      p.catch(() => made.delete(project));
      return p;
    },
    ensure: (project) => made.get(project) ?? streams.apply(project),
    reconcile: async () => {
      await retireLegacy();
      let n = 0;
      for (let after: string | undefined; ;) {
        const page = await store.projects.list(PAGE, after);
        for (const p of page) {
          await streams.apply(p.project_id);
          n++;
        }
        if (page.length < PAGE) return n;
        after = page.at(-1)?.project_id;
      }
    },
  };

  // A publish of the api's own to a project with no stream (one an operator removed) makes it.
  useStreamProvisioner(deps.nc, async (subject) => {
    const t = subject.split('.');
    const project = t[0] === root && t[4] === 'cmd' && isValidId(t[2]) ? t[2] : undefined;
    if (project === undefined || (await store.projects.get(project)) === undefined) return false;
    made.delete(project);
    await streams.ensure(project);
    return true;
  });
  return streams;
}
