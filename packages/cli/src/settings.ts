// Connection settings: flags first, then the environment. The CLI is a user's tool, not a
// service, so it reads its own variables here (and only here) instead of config.toml.
import { DEFAULT_ROOT } from '@toolmesh/protocol';
import { usageError } from './exit.ts';

export interface GlobalFlags {
  apiUrl?: string;
  apiKey?: string;
  natsUrl?: string;
  busCreds?: string;
  project?: string;
  root?: string;
  json?: boolean;
}

export interface Settings {
  apiUrl: string;
  apiKey: string | undefined;
  natsUrl: string;
  /** Path of a project's bus credential (.creds); none connects without authentication. */
  busCreds: string | undefined;
  project: string | undefined;
  root: string;
  json: boolean;
}

export const ENV_HELP = `Environment:
  TOOLMESH_API_URL       the api (default http://127.0.0.1:8080)
  TOOLMESH_API_KEY       a project api key (tmk_...) or the admin key
  TOOLMESH_PROJECT       the project id
  TOOLMESH_SUBJECT_ROOT  the deployment's [nats] subject_root (default cg)
  NATS_URL               the NATS server (default nats://127.0.0.1:4222)
  TOOLMESH_BUS_CREDS     a project's bus credential (.creds file from POST /bus-credentials)`;

export function resolveSettings(
  flags: GlobalFlags,
  env: Readonly<Record<string, string | undefined>>,
): Settings {
  const pick = (flag: string | undefined, name: string) => flag ?? (env[name] || undefined);
  return {
    apiUrl: (pick(flags.apiUrl, 'TOOLMESH_API_URL') ?? 'http://127.0.0.1:8080').replace(/\/+$/, ''),
    apiKey: pick(flags.apiKey, 'TOOLMESH_API_KEY'),
    natsUrl: pick(flags.natsUrl, 'NATS_URL') ?? 'nats://127.0.0.1:4222',
    busCreds: pick(flags.busCreds, 'TOOLMESH_BUS_CREDS'),
    project: pick(flags.project, 'TOOLMESH_PROJECT'),
    root: pick(flags.root, 'TOOLMESH_SUBJECT_ROOT') ?? DEFAULT_ROOT,
    json: flags.json ?? false,
  };
}

export function projectOf(s: Settings): string {
  if (!s.project) throw usageError('no project: pass --project or set TOOLMESH_PROJECT');
  return s.project;
}
