// Tells whether an E2B server has `/connect` and what the e2b provider does to reach a sandbox
// there (`scripts/e2b-connect-probe.ts` prints the report). Without a sandbox id it creates a
// short-lived one, proves the path open() would take by running `true` through it, and kills
// it. With an id it only looks: info, then the connect route (which, where it exists, resumes a
// paused sandbox and sets its timeout, as open() would), and never runs anything in it.
import { createE2bSandboxProvider, type E2bSandboxOptions } from './e2b.ts';
import { createE2bRest } from './e2b-rest.ts';

export const ConnectSupport = {
  /** `/connect` answered 2xx: open() uses it. */
  supported: 'supported',
  /** `/connect` answered 404 for a sandbox the info route knows: open() falls back. */
  missing: 'missing',
  /** Another answer; the status says which. */
  error: 'error',
  /** The sandbox is gone (info 404): nothing to ask. */
  unknown: 'unknown',
} as const;
export type ConnectSupport = (typeof ConnectSupport)[keyof typeof ConnectSupport];

export interface E2bConnectProbe {
  readonly apiUrl: string;
  readonly sandboxId: string;
  /** True when the probe created the sandbox (and killed it at the end). */
  readonly createdForProbe: boolean;
  /** State before the probe touched it. */
  readonly state: 'running' | 'paused' | 'gone';
  readonly connect: ConnectSupport;
  readonly connectStatus: number | undefined;
  /** What open() does when /connect is missing, in order. */
  readonly fallback: {
    readonly resumeNeeded: boolean;
    readonly hasEnvdAccessToken: boolean;
    /** The domain envd is reached under: the sandbox's own, else the configured one. */
    readonly domain: string;
    /** Where envd requests go. */
    readonly envdUrl: string;
    readonly steps: readonly string[];
  };
  /** A command ran through the path open() takes; undefined when not tried (a given id). */
  readonly verified: boolean | undefined;
}

export interface ProbeOptions extends E2bSandboxOptions {
  /** Probe this sandbox instead of creating one. */
  readonly sandboxId?: string;
}

const ENVD_PORT = 49983;

export async function probeE2bConnect(options: ProbeOptions): Promise<E2bConnectProbe> {
  const apiUrl = options.apiUrl || `https://api.${options.domain}`;
  const rest = createE2bRest({
    apiUrl,
    apiKey: options.apiKey,
    requestTimeoutMs: options.requestTimeoutMs,
  });
  // A short life for a probe's own sandbox: if the probe dies, E2B kills it soon anyway.
  const provider = createE2bSandboxProvider({
    ...options,
    sandboxTimeoutSec: options.sandboxId ? options.sandboxTimeoutSec : 120,
  });
  let sandboxId = options.sandboxId;
  const createdForProbe = sandboxId === undefined;
  try {
    if (sandboxId === undefined) {
      const created = await provider.create({
        key: { project: 'e2b-connect-probe', agent: 'probe', session: 'probe' },
      });
      sandboxId = created.id;
    }
    const info = await rest.info(sandboxId);
    const domain = info?.domain ?? options.domain;
    const envdUrl = options.sandboxUrl || `https://${ENVD_PORT}-${sandboxId}.${domain}`;
    const resumeNeeded = info?.state === 'paused';
    const steps = [
      `GET ${apiUrl}/sandboxes/${sandboxId} (state, envdAccessToken, domain)`,
      ...(resumeNeeded ? [`POST ${apiUrl}/sandboxes/${sandboxId}/resume`] : []),
      `envd at ${envdUrl} with X-Access-Token`,
    ];
    const base = { apiUrl, sandboxId, createdForProbe };
    if (!info) {
      return {
        ...base,
        state: 'gone',
        connect: 'unknown',
        connectStatus: undefined,
        fallback: { resumeNeeded: false, hasEnvdAccessToken: false, domain, envdUrl, steps: [] },
        verified: undefined,
      };
    }
    const status = await rest.connectStatus(sandboxId, options.sandboxTimeoutSec);
    const connect: ConnectSupport =
      status >= 200 && status < 300 ? 'supported' : status === 404 ? 'missing' : 'error';
    let verified: boolean | undefined;
    if (createdForProbe) {
      // The same path a service takes: open() by id (fallback included), then one command.
      const reopened = await provider.open(sandboxId);
      const result = await reopened?.exec({ argv: ['true'] }, { timeoutMs: 30_000 });
      verified = result?.exitCode === 0;
    }
    return {
      ...base,
      state: info.state,
      connect,
      connectStatus: status,
      fallback: {
        resumeNeeded,
        hasEnvdAccessToken: info.envdAccessToken !== undefined,
        domain,
        envdUrl,
        steps,
      },
      verified,
    };
  } finally {
    if (createdForProbe && sandboxId !== undefined) await provider.destroy(sandboxId);
    await provider.close();
  }
}

/** The report as a few lines for a terminal. */
export function describeProbe(probe: E2bConnectProbe): string {
  const lines = [
    `E2B API: ${probe.apiUrl}`,
    `sandbox: ${probe.sandboxId}${probe.createdForProbe ? ' (created for this probe, now killed)' : ''}, ${probe.state}`,
  ];
  switch (probe.connect) {
    case 'supported':
      lines.push(`/connect: supported (HTTP ${probe.connectStatus}); open() uses it.`);
      break;
    case 'missing':
      lines.push(`/connect: missing (HTTP 404 while the sandbox exists); open() falls back:`);
      break;
    case 'error':
      lines.push(`/connect: answered HTTP ${probe.connectStatus}; neither supported nor missing.`);
      break;
    case 'unknown':
      lines.push(
        '/connect: not asked, the API says the sandbox is gone (404); open() returns nothing.',
      );
      break;
    default: {
      const never: never = probe.connect;
      throw new Error(`unknown connect support ${String(never)}`);
    }
  }
  if (probe.connect !== 'unknown') {
    if (probe.connect === 'supported') lines.push('fallback, if /connect ever answers 404:');
    probe.fallback.steps.forEach((step, i) => lines.push(`  ${i + 1}. ${step}`));
    if (!probe.fallback.hasEnvdAccessToken) {
      lines.push(
        '  (the info carries no envd access token: envd must accept requests without one)',
      );
    }
  }
  if (probe.verified !== undefined) {
    lines.push(
      `verified: ${probe.verified ? 'a command ran through that path' : 'the command did NOT run'}`,
    );
  }
  return `${lines.join('\n')}\n`;
}
