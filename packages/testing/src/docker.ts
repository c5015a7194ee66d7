// Whether a container engine answers, decided once per process. The fixtures prefer
// testcontainers when one does and fall back to local binaries otherwise, so the answer must
// come quickly when there is no engine at all (the common case on a bare CI runner).
import { existsSync } from 'node:fs';
import { homedir, userInfo } from 'node:os';
import { join } from 'node:path';

const CHECK_TIMEOUT_MS = 5_000;
const CACHE = Symbol.for('toolmesh.testing.dockerAvailable');

export function dockerAvailable(): Promise<boolean> {
  const store = globalThis as { [CACHE]?: Promise<boolean> };
  store[CACHE] ??= check();
  return store[CACHE];
}

async function check(): Promise<boolean> {
  // The places testcontainers looks (its configuration, the rootful and rootless sockets).
  // When none exists there is no engine to ask, and we answer without loading testcontainers.
  const candidates = [
    '/var/run/docker.sock',
    join(homedir(), '.docker', 'run', 'docker.sock'),
    join(homedir(), '.docker', 'desktop', 'docker.sock'),
    join('/run', 'user', String(userInfo().uid), 'docker.sock'),
    ...(process.env['XDG_RUNTIME_DIR'] === undefined
      ? []
      : [join(process.env['XDG_RUNTIME_DIR'], 'docker.sock')]),
    join(homedir(), '.testcontainers.properties'),
  ];
  const configured =
    process.env['DOCKER_HOST'] !== undefined ||
    process.env['TESTCONTAINERS_HOST_OVERRIDE'] !== undefined;
  if (!configured && !candidates.some((p) => existsSync(p))) return false;
  // Something is there: let testcontainers' own strategies ping it, so that we agree with it
  // on which engine to use. A socket file of a dead engine fails fast; the timeout covers an
  // engine that accepts connections and never answers.
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), CHECK_TIMEOUT_MS);
    timer.unref();
  });
  const probe = import('testcontainers').then(
    async ({ getContainerRuntimeClient }) => {
      await getContainerRuntimeClient();
      return true;
    },
    () => false,
  );
  const answer = await Promise.race([probe.catch(() => false), timeout]);
  clearTimeout(timer);
  return answer;
}
