// Connection settings: flags first, then the environment, then a running `pnpm stack` found on
// this machine (the cwd's checkout, else the one this CLI belongs to). The CLI is a user's tool,
// not a service, so it reads its own variables here (and only here) instead of config.toml.
import { join } from 'node:path';
import { DEFAULT_NATS_URL, findLocalStack, type LocalStack } from '@toolmesh/client';
import { DEFAULT_ROOT } from '@toolmesh/protocol';
import { usageError } from './exit.ts';

/** The checkout this CLI belongs to: its stack is found from any folder. */
const OWN_CHECKOUT = join(import.meta.dirname, '..', '..', '..');

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
  /** The key was given (flag or environment), not taken from the local stack. */
  apiKeyExplicit: boolean;
  natsUrl: string;
  /** Path of a project's bus credential (.creds); none connects without authentication. */
  busCreds: string | undefined;
  project: string | undefined;
  root: string;
  json: boolean;
  /** The admin key: TOOLMESH_ADMIN_KEY, or the local stack's (projects commands use it). */
  adminKey: string | undefined;
  /** The running local stack these settings fall back on (said on stderr). */
  stack: LocalStack | undefined;
}

export const ENV_HELP = `Environment:
  TOOLMESH_API_URL       the api (default http://127.0.0.1:8080)
  TOOLMESH_API_KEY       a project api key (tmk_...) or the admin key
  TOOLMESH_PROJECT       the project id
  TOOLMESH_SUBJECT_ROOT  the deployment's [nats] subject_root (default cg)
  NATS_URL               the NATS server (default nats://127.0.0.1:4222)
  TOOLMESH_BUS_CREDS     a project's bus credential (.creds file from POST /bus-credentials)
  TOOLMESH_ADMIN_KEY     the deployment's admin key (toolmesh projects list|create)
With none of these, a running \`pnpm stack\` is used: the one of the checkout above the current
folder, else the one of this CLI's checkout (its api, NATS, project, key and bus credential).
Flags and variables win over it; a command that uses it says so on stderr.`;

export function resolveSettings(
  flags: GlobalFlags,
  env: Readonly<Record<string, string | undefined>>,
  cwd: string = process.cwd(),
): Settings {
  const pick = (flag: string | undefined, name: string) => flag ?? (env[name] || undefined);
  const explicitApi = pick(flags.apiUrl, 'TOOLMESH_API_URL')?.replace(/\/+$/, '');
  const explicitNats = pick(flags.natsUrl, 'NATS_URL');
  const stack = findLocalStack({ cwd, env, checkouts: [OWN_CHECKOUT] });
  // A stack is used while every address given is its own: its key, project and credential never
  // go to another api or server, nor are they mixed with another deployment's.
  const found =
    stack !== undefined &&
    (explicitApi === undefined || explicitApi === stack.apiUrl) &&
    (explicitNats === undefined || explicitNats === stack.natsUrl)
      ? stack
      : undefined;
  const apiUrl = explicitApi ?? found?.apiUrl ?? 'http://127.0.0.1:8080';
  const natsUrl = explicitNats ?? found?.natsUrl ?? DEFAULT_NATS_URL;
  const explicitKey = pick(flags.apiKey, 'TOOLMESH_API_KEY');
  return {
    apiUrl,
    apiKey: explicitKey ?? found?.apiKey,
    apiKeyExplicit: explicitKey !== undefined,
    natsUrl,
    busCreds: pick(flags.busCreds, 'TOOLMESH_BUS_CREDS') ?? found?.busCreds,
    project: pick(flags.project, 'TOOLMESH_PROJECT') ?? found?.project,
    root: pick(flags.root, 'TOOLMESH_SUBJECT_ROOT') ?? found?.root ?? DEFAULT_ROOT,
    json: flags.json ?? false,
    adminKey: env['TOOLMESH_ADMIN_KEY'] || found?.adminKey || undefined,
    stack: found,
  };
}

export function projectOf(s: Settings): string {
  if (!s.project) throw usageError('no project: pass --project or set TOOLMESH_PROJECT');
  return s.project;
}
