// What an operator checks before `docker-compose up`: every process of services/ is in the
// stack, each has a health check, the configuration is mounted read-only, the secrets are
// required, each service's environment is a configuration the process accepts, and the image
// has what the skills sandbox needs. (`pnpm check:deploy` validates the same files with
// docker-compose itself and a Dockerfile linter.)
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '@toolmesh/config';
import { blocksOf } from './support/doc-blocks.ts';
import { parseCompose } from './support/compose-check.ts';

const ROOT = join(import.meta.dirname, '..');
const compose = parse(readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8'), {
  merge: true,
}) as { services: Record<string, any>; volumes: Record<string, unknown> };
const services = compose.services;
const dockerfile = readFileSync(join(ROOT, 'infra/Dockerfile'), 'utf8');
const processes = readdirSync(join(ROOT, 'services'), { withFileTypes: true })
  .filter((d) => d.isDirectory())
  .map((d) => d.name);
/** The services run from the toolmesh image: the five processes and the migrate job. */
const toolmesh = Object.entries(services).filter(
  ([, s]) => s.build?.dockerfile === 'infra/Dockerfile',
);

/** Compose's variable interpolation, for the forms this file uses. */
function interpolate(value: string, vars: Record<string, string>): string {
  return value
    .replace(
      /\$\{([A-Z0-9_]+)(?::([-?])([^}]*))?\}/g,
      (_m, name: string, op: string | undefined, arg: string | undefined): string => {
        const v = vars[name];
        if (v !== undefined && v !== '') return v;
        if (op === '?') throw new Error(`${name} is required: ${arg}`);
        return op === '-' ? (arg ?? '') : '';
      },
    )
    .replace(/\$\$/g, '$');
}

function envOf(name: string, vars: Record<string, string>): Record<string, string> {
  const env = services[name].environment as Record<string, string | number>;
  return Object.fromEntries(Object.entries(env).map(([k, v]) => [k, interpolate(String(v), vars)]));
}

const ADMIN = 'admin-key-0123456789abcdefghij';
const secrets = { POSTGRES_PASSWORD: 'pw', TOOLMESH_ADMIN_KEY: ADMIN };

describe('docker-compose.yml', () => {
  it('runs every process of services/ from the one image, by name', () => {
    expect(processes).toEqual(expect.arrayContaining(['api', 'skills']));
    for (const name of processes) {
      expect(services[name], `compose service for services/${name}`).toBeDefined();
      expect(services[name].build.dockerfile).toBe('infra/Dockerfile');
      expect(services[name].command).toEqual([name]);
    }
    for (const name of ['agent-worker', 'sandbox-reaper', 'tools']) {
      expect(services[name]).toBeDefined();
    }
  });

  it('gives nats, postgres and every long-running process a health check', () => {
    for (const name of ['nats', 'postgres', ...processes, 'agent-worker', 'sandbox-reaper']) {
      expect(services[name].healthcheck?.test, name).toEqual(expect.any(Array));
    }
    expect(services['nats'].healthcheck.test.join(' ')).toContain(':8222/healthz');
    expect(services['postgres'].healthcheck.test).toContain('pg_isready');
    expect(services['api'].healthcheck.test).toEqual([
      'CMD',
      'node',
      'infra/healthcheck.ts',
      'api',
    ]);
    expect(services['tools'].healthcheck.test).toEqual([
      'CMD',
      'node',
      'infra/healthcheck.ts',
      'tools',
    ]);
  });

  it('checks each process through its own readiness or health route, and waits out its stop', () => {
    // infra/healthcheck.ts asks /readyz of the api and /healthz of the others on their health
    // port; a port of 0 (any free one) would leave it guessing, so compose sets each.
    for (const name of processes.filter((p) => p !== 'api')) {
      const config = loadConfig({ env: envOf(name, secrets) });
      const port = {
        skills: config.skills.health_port,
        tools: config.tools.health_port,
        'agent-worker': config.agent.health_port,
        'sandbox-reaper': config.reaper.health_port,
      }[name];
      expect(port, name).toEqual(expect.any(Number));
      expect(port, name).not.toBe(0);
    }
    // Compose SIGKILLs a container stop_grace_period after SIGTERM: it must outlast the bound a
    // process gives its own stop, or calls in flight are cut off halfway.
    for (const [name, s] of toolmesh) {
      if (name === 'migrate' || name === 'nats-auth') continue;
      const grace = /^(\d+)s$/.exec(String(s.stop_grace_period))?.[1];
      expect(grace, `${name} stop_grace_period`).toBeDefined();
      const { service } = loadConfig({ env: envOf(name, secrets) });
      expect(Number(grace) * 1000, name).toBeGreaterThan(service.stop_timeout_ms);
    }
  });

  it('hands the secrets key to the api and the tools service, and no private host by default', () => {
    const key = Buffer.alloc(32, 7).toString('base64');
    for (const name of ['api', 'tools']) {
      const config = loadConfig({ env: envOf(name, { ...secrets, TOOLMESH_SECRETS_KEY: key }) });
      expect(config.secrets.key, name).toBe(key);
    }
    const tools = loadConfig({ env: envOf('tools', secrets) });
    expect(tools.secrets.key).toBe('');
    expect(tools.tools.allowed_private_hosts).toEqual([]);
  });

  it('keeps postgres and nats data on volumes and mounts the nats configuration', () => {
    expect(services['postgres'].volumes).toContain('postgres-data:/var/lib/postgresql/data');
    expect(services['nats'].volumes).toEqual(
      expect.arrayContaining(['nats-auth:/etc/nats/auth:ro', 'nats-data:/data']),
    );
    expect(services['nats'].command).toEqual(['-c', '/etc/nats/auth/nats.conf']);
    expect(Object.keys(compose.volumes)).toEqual(
      expect.arrayContaining(['postgres-data', 'nats-data', 'nats-auth', 'artifacts', 'sandboxes']),
    );
  });

  it('runs NATS with authentication: each process its own user, only the api holds the keys', () => {
    expect(services['nats-auth'].command).toEqual([
      'nats-auth',
      '--dir',
      '/var/lib/toolmesh/nats-auth',
    ]);
    expect(services['nats-auth'].restart).toBe('no');
    expect(services['nats-auth'].volumes).toContain('nats-auth:/var/lib/toolmesh/nats-auth');
    expect(services['nats'].depends_on['nats-auth'].condition).toBe(
      'service_completed_successfully',
    );
    for (const name of [...processes, 'agent-worker', 'sandbox-reaper']) {
      const env = envOf(name, secrets);
      expect(env['CG__NATS__CREDS'], name).toBe(`/var/lib/toolmesh/nats-auth/creds/${name}.creds`);
      expect(services[name].volumes, name).toContain('nats-auth:/var/lib/toolmesh/nats-auth:ro');
      if (name === 'api') {
        expect(env['CG__NATS__AUTH_KEYS']).toBe('/var/lib/toolmesh/nats-auth/keys.json');
      } else {
        expect(env['CG__NATS__AUTH_KEYS'], name).toBeUndefined();
      }
    }
  });

  it('runs Postgres on its durable defaults: nothing turns fsync, synchronous commit or full-page writes off', () => {
    const pg = services['postgres'];
    // Postgres's own defaults are all on. They could be turned off on its command line, through
    // the environment (PGOPTIONS, POSTGRES_INITDB_ARGS) or by a configuration file mounted in.
    expect(pg.entrypoint).toBeUndefined();
    const said = [...[pg.command ?? []].flat(), ...Object.values(pg.environment ?? {})]
      .map(String)
      .join(' ');
    expect(said).not.toMatch(/fsync|synchronous_commit|full_page_writes|--no-sync/);
    expect(pg.volumes).toEqual(['postgres-data:/var/lib/postgresql/data']);
    expect(pg.image).toMatch(/^postgres:/);
  });

  it('has JetStream fsync every write: nats-auth writes sync_interval always, and the image takes it', () => {
    // sync_interval came with nats-server 2.10; an older server refuses the whole file.
    const tag = /^nats:(\d+)\.(\d+)/.exec(services['nats'].image);
    expect(tag, services['nats'].image).not.toBeNull();
    const [major, minor] = [Number(tag?.[1]), Number(tag?.[2])];
    expect(major > 2 || (major === 2 && minor >= 10), services['nats'].image).toBe(true);

    // The nats-auth job's own command, through the image's entrypoint, into a folder of ours.
    const dir = mkdtempSync(join(tmpdir(), 'toolmesh-deploy-'));
    try {
      const args = (services['nats-auth'].command as string[]).map((a) =>
        a === '/var/lib/toolmesh/nats-auth' ? dir : a,
      );
      const r = spawnSync('sh', [join(ROOT, 'infra/entrypoint.sh'), ...args], {
        env: { PATH: process.env['PATH'] },
        encoding: 'utf8',
      });
      expect(r.status, r.stderr).toBe(0);
      const conf = readFileSync(join(dir, 'nats.conf'), 'utf8');
      expect(conf).toMatch(/^jetstream \{[^}]*sync_interval: always[^}]*\}$/m);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('mounts config.toml read-only into every toolmesh service', () => {
    expect(toolmesh.length).toBeGreaterThanOrEqual(5);
    for (const [name, s] of toolmesh) {
      expect(s.volumes, name).toContain('./config.toml:/app/config.toml:ro');
    }
  });

  it('migrates once postgres is healthy, and starts the processes after the migration', () => {
    expect(services['migrate'].command).toEqual(['migrate']);
    expect(services['migrate'].restart).toBe('no');
    expect(services['migrate'].depends_on.postgres.condition).toBe('service_healthy');
    for (const name of [...processes, 'agent-worker', 'sandbox-reaper']) {
      expect(services[name].depends_on.migrate.condition, name).toBe(
        'service_completed_successfully',
      );
      expect(services[name].depends_on.nats.condition, name).toBe('service_healthy');
    }
  });

  it('refuses to interpolate without the admin key and the database password', () => {
    expect(() => envOf('api', { POSTGRES_PASSWORD: 'pw' })).toThrow(/TOOLMESH_ADMIN_KEY/);
    expect(() => envOf('skills', {})).toThrow(/POSTGRES_PASSWORD/);
  });

  it('gives each process present here an environment its configuration accepts', () => {
    for (const [name] of toolmesh) {
      // A process that is not in this checkout yet has no configuration schema to check against.
      if (name !== 'migrate' && !existsSync(join(ROOT, 'services', name, 'src/main.ts'))) continue;
      const config = loadConfig({ env: envOf(name, secrets) });
      expect(config.nats.url, name).toBe('nats://nats:4222');
      expect(config.postgres.url, name).toBe('postgres://postgres:pw@postgres:5432/toolmesh');
      expect(config.artifacts.kind, name).toBe('fs');
    }
    const api = loadConfig({ env: envOf('api', secrets) });
    expect(api.api.host).toBe('0.0.0.0');
    expect(api.api.admin_key).toBe(ADMIN);
    expect(services['api'].ports).toEqual([`\${TOOLMESH_API_PORT:-8080}:${api.api.port}`]);
  });

  it('lets the MCP endpoints answer to the names the api is reached by, and no other', () => {
    // The other containers (and the CLI run in one) reach the api as api:8080; this machine at
    // the published port; a reverse proxy under TOOLMESH_PUBLIC_HOST.
    expect(loadConfig({ env: envOf('api', secrets) }).api.allowed_hosts).toEqual([
      'api:8080',
      'localhost:8080',
      '127.0.0.1:8080',
      '[::1]:8080',
      'api:8080',
    ]);
    const vars = {
      ...secrets,
      TOOLMESH_API_PORT: '9000',
      TOOLMESH_PUBLIC_HOST: 'mesh.example.com',
    };
    expect(loadConfig({ env: envOf('api', vars) }).api.allowed_hosts).toEqual([
      'api:8080',
      'localhost:9000',
      '127.0.0.1:9000',
      '[::1]:9000',
      'mesh.example.com',
    ]);
  });

  it('switches artifacts to the GCS emulator of the gcs profile with three variables', () => {
    expect(services['gcs'].profiles).toEqual(['gcs']);
    expect(services['gcs'].image).toMatch(/^fsouza\/fake-gcs-server:/);
    const vars = {
      ...secrets,
      TOOLMESH_ARTIFACTS_KIND: 'gcs',
      TOOLMESH_GCS_BUCKET: 'toolmesh',
      TOOLMESH_GCS_API_ENDPOINT: 'http://gcs:4443',
    };
    for (const name of ['api', 'skills']) {
      const { artifacts } = loadConfig({ env: envOf(name, vars) });
      expect(artifacts).toMatchObject({
        kind: 'gcs',
        gcs_bucket: 'toolmesh',
        gcs_api_endpoint: 'http://gcs:4443',
      });
    }
  });

  it('scrapes the /metrics of every process on the port its configuration serves them', () => {
    for (const name of ['prometheus', 'grafana', 'jaeger']) {
      expect(services[name].profiles, name).toEqual(['observability']);
      // Published on the host's loopback only.
      for (const port of services[name].ports ?? []) expect(port, name).toMatch(/^127\.0\.0\.1:/);
    }
    const prom = parse(readFileSync(join(ROOT, 'infra/grafana/prometheus.yml'), 'utf8')) as {
      scrape_configs: { job_name: string; dns_sd_configs: { names: string[]; port: number }[] }[];
    };
    const target = Object.fromEntries(
      prom.scrape_configs.map((c) => [c.job_name, c.dns_sd_configs[0]!]),
    );
    expect(Object.keys(target).sort()).toEqual([...processes].sort());
    for (const name of processes) {
      expect(target[name]!.names, name).toEqual([name]);
      const config = loadConfig({ env: envOf(name, secrets) });
      const listen: Record<string, { host: string; port: number }> = {
        api: { host: config.api.host, port: config.api.port },
        skills: { host: config.skills.health_host, port: config.skills.health_port },
        tools: { host: config.tools.health_host, port: config.tools.health_port },
        'agent-worker': { host: config.agent.health_host, port: config.agent.health_port },
        'sandbox-reaper': { host: config.reaper.health_host, port: config.reaper.health_port },
      };
      expect(listen[name], name).toEqual({ host: '0.0.0.0', port: target[name]!.port });
    }
    expect(services['prometheus'].volumes).toContain(
      './infra/grafana/prometheus.yml:/etc/prometheus/prometheus.yml:ro',
    );
  });

  it('sends traces to the Jaeger of the observability profile when TOOLMESH_OTEL_ENDPOINT says so', () => {
    for (const [name] of toolmesh) {
      if (name === 'migrate') continue;
      expect(loadConfig({ env: envOf(name, secrets) }).otel.endpoint, name).toBe('');
      const vars = { ...secrets, TOOLMESH_OTEL_ENDPOINT: 'http://jaeger:4318' };
      expect(loadConfig({ env: envOf(name, vars) }).otel.endpoint, name).toBe('http://jaeger:4318');
    }
    expect(services['jaeger'].environment.COLLECTOR_OTLP_ENABLED).toBe('true');
  });

  it("provisions a dashboard whose queries name only the processes' metric families", async () => {
    const { meshRegistry } = await import('@toolmesh/telemetry');
    const { createHttpMetrics } = await import('../services/api/src/metrics.ts');
    const families = new Set(
      [
        ...(await meshRegistry.getMetricsAsJSON()),
        ...(await createHttpMetrics().registry.getMetricsAsJSON()),
      ]
        .filter((m) => m.name.startsWith('toolmesh_'))
        .flatMap((m) =>
          String(m.type) === 'histogram'
            ? [`${m.name}_bucket`, `${m.name}_sum`, `${m.name}_count`]
            : [m.name],
        ),
    );
    const dashboard = JSON.parse(
      readFileSync(join(ROOT, 'infra/grafana/dashboards/toolmesh.json'), 'utf8'),
    ) as { uid: string; panels: { type: string; targets?: { expr: string }[] }[] };
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr));
    const used = new Set(exprs.flatMap((e) => e.match(/toolmesh_[a-z_]+/g) ?? []));
    for (const name of used) expect(families, `${name} is served`).toContain(name);
    // Every family the processes serve is on the dashboard.
    for (const f of families) {
      const base = f.replace(/_(bucket|sum|count)$/, '');
      expect(
        [...used].some((u) => u.startsWith(base)),
        `${base} is drawn`,
      ).toBe(true);
    }
    const provider = parse(
      readFileSync(join(ROOT, 'infra/grafana/provisioning/dashboards/toolmesh.yml'), 'utf8'),
    ) as { providers: { options: { path: string } }[] };
    expect(services['grafana'].volumes).toEqual(
      expect.arrayContaining([
        './infra/grafana/provisioning:/etc/grafana/provisioning:ro',
        `./infra/grafana/dashboards:${provider.providers[0]!.options.path}:ro`,
      ]),
    );
    const ds = parse(
      readFileSync(join(ROOT, 'infra/grafana/provisioning/datasources/prometheus.yml'), 'utf8'),
    ) as { datasources: { uid: string; url: string }[] };
    expect(ds.datasources[0]).toMatchObject({
      uid: 'toolmesh-prometheus',
      url: 'http://prometheus:9090',
    });
  });

  it('lets the skills and tools services open bubblewrap namespaces without privileges or capabilities', () => {
    // tools: stdio MCP servers run in sandboxes too.
    for (const name of ['skills', 'tools']) {
      const s = services[name];
      expect(s.security_opt, name).toEqual(
        expect.arrayContaining(['seccomp=unconfined', 'apparmor=unconfined']),
      );
      expect(s.privileged, name).toBeUndefined();
      expect(s.cap_add, name).toBeUndefined();
      expect(s.volumes, name).toContain('sandboxes:/var/lib/toolmesh/sandboxes');
    }
    expect(services['sandbox-reaper'].volumes).toContain('sandboxes:/var/lib/toolmesh/sandboxes');
  });
});

describe('the compose commands of docs/operations.md', () => {
  // The doc test runs them through docker-compose's own `config`; this holds without it.
  const page = readFileSync(join(ROOT, 'docs/operations.md'), 'utf8');
  const shell = blocksOf('docs/operations.md', page)
    .filter((b) => b.tag === 'sh' || b.tag === 'bash')
    .map((b) => b.code)
    .join('\n');
  const commands = [shell]
    .flatMap((code) => code.replaceAll('\\\n', ' ').split('\n'))
    .map((line) => line.replace(/#.*$/, '').trim())
    .map((line) => /(?:^|\s)docker-compose\s+(.*)$/.exec(line))
    .filter((m) => m !== null)
    .map((m) => ({ line: m[0].trim(), cmd: parseCompose(m[1]!.split(/\s+/)) }));
  const profiles = new Set(Object.values(services).flatMap((s) => (s.profiles ?? []) as string[]));

  it('names only services and profiles of docker-compose.yml', () => {
    expect(commands.length).toBeGreaterThanOrEqual(9);
    for (const { line, cmd } of commands) {
      for (const name of [...cmd.services, ...cmd.scaled])
        expect(services, line).toHaveProperty([name]);
      for (const p of cmd.profiles) expect(profiles.has(p), `${line}: profile ${p}`).toBe(true);
    }
  });

  it('sets only variables the file reads', () => {
    const text = readFileSync(join(ROOT, 'docker-compose.yml'), 'utf8');
    const set = [...shell.matchAll(/(?:^|\s|export )((?:TOOLMESH_|POSTGRES_)[A-Z0-9_]+)=/gm)].map(
      (m) => m[1]!,
    );
    expect(set).toEqual(expect.arrayContaining(['TOOLMESH_ADMIN_KEY', 'TOOLMESH_GCS_BUCKET']));
    for (const v of set) expect(text, v).toContain(`\${${v}`);
  });

  it('a name the file does not have is refused', () => {
    expect(() => parseCompose(['frobnicate'])).toThrow(
      "unknown docker-compose command 'frobnicate'",
    );
    const cmd = parseCompose(['--profile', 'gcs', 'up', '-d', '--scale', 'skillz=2', 'api']);
    expect(cmd).toMatchObject({
      profiles: ['gcs'],
      sub: 'up',
      services: ['api'],
      scaled: ['skillz'],
    });
    expect(services).not.toHaveProperty(['skillz']);
  });
});

describe('infra/Dockerfile', () => {
  const stages = dockerfile.split(/^FROM /m).slice(1);
  const runtime = stages.at(-1) ?? '';

  it('runs on Node 24 slim as an unprivileged user', () => {
    expect(dockerfile).toMatch(/ARG NODE_IMAGE=node:24-bookworm-slim/);
    expect(stages.length).toBeGreaterThanOrEqual(2);
    const users = [...runtime.matchAll(/^USER (\S+)/gm)].map((m) => m[1]);
    expect(users.at(-1)).toBe('node');
  });

  it('installs production dependencies only, from the lockfile', () => {
    expect(dockerfile).toMatch(/pnpm install --offline --frozen-lockfile --prod/);
    expect(runtime).not.toMatch(/pnpm install/);
  });

  it('has the patches of dependencies before it fetches them (pnpm refuses without)', () => {
    const workspace = parse(readFileSync(join(ROOT, 'pnpm-workspace.yaml'), 'utf8')) as {
      patchedDependencies?: Record<string, string>;
    };
    const patches = Object.values(workspace.patchedDependencies ?? {});
    expect(patches.length).toBeGreaterThan(0);
    const beforeFetch = dockerfile.slice(0, dockerfile.indexOf('RUN pnpm fetch'));
    for (const file of patches) {
      expect(existsSync(join(ROOT, file)), file).toBe(true);
      expect(file.startsWith('patches/'), file).toBe(true);
    }
    expect(beforeFetch).toMatch(/^COPY patches \.\/patches$/m);
  });

  it('has what the skills sandbox and the example skills need', () => {
    for (const pkg of [
      'bubblewrap',
      'socat',
      'ripgrep',
      'python3',
      'python3-pil',
      'python3-venv',
      'python3-pip',
      'util-linux',
    ]) {
      expect(runtime).toMatch(new RegExp(`\\s${pkg}\\s`));
    }
  });

  it('starts the process its first argument names, and refuses an unknown name', () => {
    // A configuration every process refuses: each exits at once, naming itself in the message,
    // which proves the entrypoint reached that process's code without starting it.
    const run = (...args: string[]) =>
      spawnSync('sh', [join(ROOT, 'infra/entrypoint.sh'), ...args], {
        env: { PATH: process.env['PATH'], CG__LOG__LEVEL: 'bogus' },
        encoding: 'utf8',
      });
    for (const name of processes) {
      const r = run(name);
      expect(r.status, name).toBe(2);
      expect(r.stderr, name).toContain(`${name}: env CG__LOG__LEVEL: log.level`);
    }
    const migrate = run('migrate');
    expect(migrate.status).toBe(1);
    expect(migrate.stdout).toContain('migrate: invalid configuration');
    const help = run('toolmesh', '--help');
    expect(help.status).toBe(0);
    expect(help.stdout).toContain('Exit codes:');
    const unknown = run('frobnicate');
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toContain("unknown process 'frobnicate'");
  });

  it('starts each compose command through its entrypoint', () => {
    const entry = readFileSync(join(ROOT, 'infra/entrypoint.sh'), 'utf8');
    expect(entry).toContain('services/$name/src/main.ts');
    expect(entry).toContain('migrate) exec node scripts/migrate.ts');
    expect(entry).toContain('nats-auth) exec node scripts/nats-auth.ts');
  });
});

describe('.dockerignore', () => {
  it('keeps local state and installed dependencies out of the build context', () => {
    const ignored = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n');
    expect(ignored).toEqual(expect.arrayContaining(['**/node_modules', '.data', '.git']));
  });
});
