// How a command and its environment cross into the sandbox without ever becoming shell text.
//
// sandbox-runtime wraps a *shell string*, and the wrapped line is run by a bash on the host
// before bwrap starts. So the string we hand it is one fixed script (LAUNCHER below) and every
// caller value (argv, env, limits, cwd) travels as environment variables under a TOOLMESH_
// prefix. On the host those names mean nothing to bash, the dynamic loader or bwrap (a caller's
// LD_PRELOAD or BASH_ENV arrives as TOOLMESH_ENV_LD_PRELOAD, inert); inside the sandbox the
// launcher drops every variable not on the allow-list, restores the caller's names and execs
// the command under prlimit. Values are only ever expanded inside double quotes: never parsed.
import { SandboxError } from './errors.ts';
import type { CommandSpec, ExecLimits } from './provider.ts';

const ARG = 'TOOLMESH_ARG_';
const ENV = 'TOOLMESH_ENV_';
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** PATH inside the sandbox unless the caller sets one. */
export const SANDBOX_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin';

/**
 * Runs inside the sandbox under bash. Kept besides the variables it restores: the proxy settings
 * sandbox-runtime injects. All egress goes through its proxies, so clients that honour them
 * reach the allowed hosts, and their attempts at other hosts are refused *and reported*; a
 * client that ignores them finds an empty network namespace.
 */
export const LAUNCHER = `
TOOLMESH_A=()
TOOLMESH_I=0
while :; do
  TOOLMESH_N="${ARG}$TOOLMESH_I"
  [ -n "\${!TOOLMESH_N+x}" ] || break
  TOOLMESH_A+=("\${!TOOLMESH_N}")
  TOOLMESH_I=$((TOOLMESH_I + 1))
done
TOOLMESH_L=()
[ -z "\${TOOLMESH_FSIZE-}" ] || TOOLMESH_L+=("--fsize=$TOOLMESH_FSIZE")
[ -z "\${TOOLMESH_NPROC-}" ] || TOOLMESH_L+=("--nproc=$TOOLMESH_NPROC")
[ -z "\${TOOLMESH_AS-}" ] || TOOLMESH_L+=("--as=$TOOLMESH_AS")
[ -z "\${TOOLMESH_CPU-}" ] || TOOLMESH_L+=("--cpu=$TOOLMESH_CPU:$((TOOLMESH_CPU + 1))")
cd -- "$TOOLMESH_CWD" || exit 126
for TOOLMESH_V in $(compgen -e); do
  case "$TOOLMESH_V" in
    ${ENV}*) ;;
    HTTP_PROXY|HTTPS_PROXY|http_proxy|https_proxy|ALL_PROXY|all_proxy|NO_PROXY|no_proxy) ;;
    *) unset "$TOOLMESH_V" 2>/dev/null ;;
  esac
done
for TOOLMESH_V in "\${!${ENV}@}"; do
  export "\${TOOLMESH_V#${ENV}}=\${!TOOLMESH_V}"
  unset "$TOOLMESH_V"
done
# bash lowers SHLVL by one on exec; env(1) puts back the value the command was given.
TOOLMESH_S="\${SHLVL-}"
exec /usr/bin/env "SHLVL=$TOOLMESH_S" /usr/bin/prlimit "\${TOOLMESH_L[@]}" -- "\${TOOLMESH_A[@]}"
`;

export interface LaunchInput {
  readonly command: CommandSpec;
  readonly env: Readonly<Record<string, string>>;
  /** Absolute path of the working directory as the sandbox sees it. */
  readonly cwd: string;
  readonly limits: Pick<ExecLimits, 'fileSizeBytes' | 'processes'>;
  /** Sets RLIMIT_NPROC; pointless as root, where the kernel does not enforce it. */
  readonly rlimitProcesses: boolean;
  /** RLIMIT_AS of every process of the command (where no memory cgroup caps the sandbox). */
  readonly rlimitMemoryBytes?: number;
  /**
   * RLIMIT_CPU in seconds (where no cpu cgroup throttles the sandbox): past it the process gets
   * SIGXCPU, a second later SIGKILL.
   */
  readonly rlimitCpuSec?: number;
}

/** The environment of the host-side process that starts bwrap: inert names only. */
export function launchEnv(input: LaunchInput): Record<string, string> {
  const argv =
    'argv' in input.command ? input.command.argv : ['/bin/bash', '-c', input.command.shell];
  if (argv.length === 0 || argv[0] === '') {
    throw new SandboxError('invalid_command', 'the command is empty');
  }
  const out: Record<string, string> = {
    PATH: SANDBOX_PATH,
    // SHLVL > 1 stops Debian's bash from sourcing ~/.bashrc when stdin is a socket.
    SHLVL: '1',
    LANG: 'C.UTF-8',
    TOOLMESH_CWD: input.cwd,
    // 0 is a real limit: a sandbox at its disk limit may delete, not write (disk.ts).
    TOOLMESH_FSIZE: String(nonNegativeInt(input.limits.fileSizeBytes, 'fileSizeBytes')),
  };
  if (input.rlimitProcesses) {
    out.TOOLMESH_NPROC = String(positiveInt(input.limits.processes, 'processes'));
  }
  if (input.rlimitMemoryBytes !== undefined) {
    out.TOOLMESH_AS = String(positiveInt(input.rlimitMemoryBytes, 'memoryBytes'));
  }
  if (input.rlimitCpuSec !== undefined) {
    out.TOOLMESH_CPU = String(positiveInt(input.rlimitCpuSec, 'cpuSec'));
  }
  argv.forEach((arg, i) => {
    if (arg.includes('\0')) throw new SandboxError('invalid_command', `argument ${i} contains NUL`);
    out[`${ARG}${i}`] = arg;
  });
  for (const [name, value] of Object.entries(input.env)) {
    if (!NAME.test(name)) {
      throw new SandboxError(
        'invalid_env',
        `env name ${JSON.stringify(name)} is not an identifier`,
      );
    }
    if (name.startsWith('TOOLMESH_')) {
      throw new SandboxError('invalid_env', `env name ${name} is reserved (TOOLMESH_*)`);
    }
    if (value.includes('\0')) throw new SandboxError('invalid_env', `env ${name} contains NUL`);
    out[`${ENV}${name}`] = value;
  }
  return out;
}

function nonNegativeInt(value: number, what: string): number {
  if (!Number.isSafeInteger(value) || value < 0) {
    throw new SandboxError('invalid_command', `limit ${what} must be a non-negative integer`);
  }
  return value;
}

function positiveInt(value: number, what: string): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new SandboxError('invalid_command', `limit ${what} must be a positive integer`);
  }
  return value;
}
