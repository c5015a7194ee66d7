// `pnpm demo`: one call through a running stack: `builtin.echo` published with the client SDK,
// awaited, and its result card printed. `pnpm stack` runs it once the services are up; run it
// on its own against a stack started elsewhere (it reads .data/stack.json, or the config).
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { createClient } from '@toolmesh/client';
import { loadConfig } from '@toolmesh/config';

export interface DemoTarget {
  natsUrl: string;
  root: string;
}

export async function runDemo(target: DemoTarget): Promise<boolean> {
  const nc = await connect({ servers: target.natsUrl });
  const client = createClient({ nc, root: target.root });
  try {
    const call = {
      project: 'demo',
      channel: 'main',
      tool: 'builtin.echo',
      arguments: { hello: 'toolmesh' },
    };
    console.log(
      `demo: calling ${call.tool} in project ${call.project} with ${JSON.stringify(call.arguments)}`,
    );
    const result = await client.callTool(call, { waitMs: 30_000 });
    console.log('demo: result card');
    console.log(JSON.stringify(result, null, 2));
    return result.status === 'succeeded';
  } finally {
    await client.close();
    await nc.close();
  }
}

async function targetFromEnvironment(): Promise<DemoTarget> {
  try {
    const info = JSON.parse(
      await readFile(join(import.meta.dirname, '..', '.data', 'stack.json'), 'utf8'),
    ) as DemoTarget;
    return info;
  } catch {
    const config = loadConfig({ env: process.env });
    return { natsUrl: config.nats.url, root: config.nats.subject_root };
  }
}

if (import.meta.main) {
  const ok = await runDemo(await targetFromEnvironment()).catch((err: unknown) => {
    console.error(`demo failed: ${(err as Error).message}`);
    return false;
  });
  process.exit(ok ? 0 : 1);
}
