// `docker-compose` as the doc test puts it on the PATH of docs/operations.md: no Docker engine
// runs where the tests do, so each compose command of the page is checked instead of run. The
// real docker-compose validates and interpolates the file with the page's variables (`config
// -q`: a required variable left unset fails as `up` would), and every name the command gives
// must be in the file: its profiles, the services it starts, stops, scales or runs, and the
// process a `run` of the toolmesh image starts (infra/entrypoint.sh), and every TOOLMESH_*
// variable set for it (a misspelt one would be ignored by compose). It says what it checked.
//
//   node tests/support/compose-check.ts <the real docker-compose> <its arguments...>
import { spawnSync } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';

const ROOT = join(import.meta.dirname, '..', '..');

/** The processes infra/entrypoint.sh starts by name. */
const PROCESSES = [
  ...readdirSync(join(ROOT, 'services'), { withFileTypes: true })
    .filter((d) => d.isDirectory())
    .map((d) => d.name),
  'migrate',
  'reset-nats',
  'nats-auth',
  'toolmesh',
];

/** Options of each subcommand that take a value (the next argument). */
const VALUED: Record<string, string[]> = {
  up: ['--scale', '-t', '--timeout', '--exit-code-from'],
  run: ['-e', '--env', '-u', '--user', '-w', '--workdir', '--name', '--entrypoint', '-l'],
  stop: ['-t', '--timeout'],
  restart: ['-t', '--timeout'],
  logs: ['--tail'],
  down: ['-t', '--timeout', '--rmi'],
};
const SUBCOMMANDS = new Set([
  'build',
  'up',
  'ps',
  'stop',
  'start',
  'restart',
  'run',
  'down',
  'logs',
  'pull',
]);

export interface ComposeCommand {
  global: string[];
  profiles: string[];
  sub: string;
  services: string[];
  scaled: string[];
  /** `run`: the command after the service. */
  command: string[];
}

/** Splits a docker-compose command line into what it names. */
export function parseCompose(args: readonly string[]): ComposeCommand {
  const global: string[] = [];
  const profiles: string[] = [];
  let i = 0;
  for (; i < args.length && args[i]!.startsWith('-'); i++) {
    const a = args[i]!;
    if (!['--profile', '-f', '--file', '-p', '--project-name', '--env-file'].includes(a))
      throw new Error(`unknown docker-compose option ${a}`);
    global.push(a, args[i + 1]!);
    if (a === '--profile') profiles.push(args[i + 1]!);
    i++;
  }
  const sub = args[i++] ?? '';
  if (!SUBCOMMANDS.has(sub)) throw new Error(`unknown docker-compose command '${sub}'`);
  const services: string[] = [];
  const scaled: string[] = [];
  const command: string[] = [];
  for (; i < args.length; i++) {
    const a = args[i]!;
    if (sub === 'run' && services.length === 1) {
      command.push(a);
      continue;
    }
    if (a.startsWith('-')) {
      if (VALUED[sub]?.includes(a)) {
        if (a === '--scale') scaled.push(args[i + 1]!.split('=')[0]!);
        i++;
      }
      continue;
    }
    services.push(a);
  }
  return { global, profiles, sub, services, scaled, command };
}

function main(): number {
  const [real, ...args] = process.argv.slice(2);
  const line = `docker-compose ${args.join(' ')}`;
  const cmd = parseCompose(args);
  const compose = (...more: string[]) =>
    spawnSync(real!, [...cmd.global, ...more], { encoding: 'utf8', cwd: process.cwd() });
  const valid = compose('config', '-q');
  if (valid.status !== 0) {
    process.stderr.write(`${line}: docker-compose config refuses it:\n${valid.stderr}`);
    return valid.status ?? 1;
  }
  const known = compose('config', '--services').stdout.split('\n').filter(Boolean);
  const profiles = compose('config', '--profiles').stdout.split('\n').filter(Boolean);
  const missing = [
    ...cmd.profiles.filter((p) => !profiles.includes(p)).map((p) => `profile ${p}`),
    ...[...cmd.services, ...cmd.scaled]
      .filter((s) => !known.includes(s))
      .map((s) => `service ${s}`),
  ];
  if (cmd.sub === 'run') {
    const file = parse(readFileSync(join(process.cwd(), 'docker-compose.yml'), 'utf8'), {
      merge: true,
    }) as { services: Record<string, { build?: { dockerfile?: string } }> };
    // A run of the toolmesh image: its first word is the process the entrypoint starts.
    const ours = file.services[cmd.services[0]!]?.build?.dockerfile === 'infra/Dockerfile';
    const process0 = cmd.command[0];
    if (ours && process0 !== undefined && !PROCESSES.includes(process0))
      missing.push(`process ${process0} (infra/entrypoint.sh)`);
  }
  // Set-up's own (where it puts the `toolmesh` launcher) is not compose's.
  const vars = Object.keys(process.env).filter(
    (k) => /^(TOOLMESH_|POSTGRES_PASSWORD$)/.test(k) && k !== 'TOOLMESH_BIN_DIR',
  );
  const text = readFileSync(join(process.cwd(), 'docker-compose.yml'), 'utf8');
  missing.push(...vars.filter((v) => !text.includes(`\${${v}`)).map((v) => `variable ${v}`));
  if (missing.length > 0) {
    process.stderr.write(`${line}: not in docker-compose.yml: ${missing.join(', ')}\n`);
    return 1;
  }
  const named = [
    ...cmd.profiles.map((p) => `profile ${p}`),
    ...cmd.services,
    ...cmd.scaled,
    ...(cmd.sub === 'run' && cmd.command[0] ? [`process ${cmd.command[0]}`] : []),
    ...vars,
  ];
  process.stderr.write(
    `${line}: checked with docker-compose config (no Docker engine here): ${named.join(', ') || 'the file'}\n`,
  );
  return 0;
}

if (import.meta.main) process.exitCode = main();
