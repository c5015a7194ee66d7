// `pnpm e2b-connect-probe [--sandbox <id>] [--json]`: asks the configured E2B server (the [e2b]
// section, CG__E2B__* overrides) whether it has `/connect`, and shows what the e2b provider does
// to reach a sandbox where it does not (info -> resume if paused -> envd token and domain).
// Without --sandbox it creates a short-lived sandbox, runs `true` through that path, and kills
// it. Exit codes: 0 answered (whatever the answer), 1 the probe failed, 2 bad usage or config.
import { parseArgs } from 'node:util';
import { loadConfig, type Config } from '@toolmesh/config';
import { describeProbe, probeE2bConnect } from '@toolmesh/sandbox';
import { e2bOptionsFromConfig } from '@toolmesh/service';

async function main(): Promise<number> {
  let values: { sandbox?: string; json?: boolean; help?: boolean };
  try {
    ({ values } = parseArgs({
      options: {
        sandbox: { type: 'string' },
        json: { type: 'boolean' },
        help: { type: 'boolean', short: 'h' },
      },
    }));
  } catch (err) {
    process.stderr.write(`e2b-connect-probe: ${(err as Error).message}\n`);
    return 2;
  }
  if (values.help) {
    process.stdout.write('usage: pnpm e2b-connect-probe [--sandbox <id>] [--json]\n');
    return 0;
  }
  let config: Config;
  try {
    config = loadConfig({ env: process.env });
  } catch (err) {
    process.stderr.write(`e2b-connect-probe: invalid configuration: ${(err as Error).message}\n`);
    return 2;
  }
  const e = config.e2b;
  if (e.api_key === '') {
    process.stderr.write('e2b-connect-probe: set e2b.api_key (CG__E2B__API_KEY)\n');
    return 2;
  }
  try {
    const probe = await probeE2bConnect({
      ...e2bOptionsFromConfig(config),
      ...(values.sandbox === undefined ? {} : { sandboxId: values.sandbox }),
    });
    process.stdout.write(
      values.json ? `${JSON.stringify(probe, null, 2)}\n` : describeProbe(probe),
    );
    return 0;
  } catch (err) {
    process.stderr.write(`e2b-connect-probe failed: ${(err as Error).message}\n`);
    return 1;
  }
}

process.exitCode = await main();
