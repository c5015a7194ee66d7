// The api and the tools service on one NATS root and database, for the tests of registry tools:
// a secrets key, the tools service's log lines captured (to prove secrets never reach them),
// every api response kept (likewise), and a client to call tools over the bus.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import type { Client } from '@toolmesh/client';
import { loadConfig } from '@toolmesh/config';
import {
  startTestApi,
  type TestApi,
  type TestResponse,
} from '../../services/api/src/test/support.ts';
import { startToolsService, type ToolsService } from '../../services/tools/src/app.ts';
import { createTenantClient } from './tenants.ts';

export interface ToolsMesh {
  api: TestApi;
  client: Client;
  /** Every log line of the tools services, as written. */
  logs: string[];
  /** Every api response body, as sent. */
  responses: string[];
  request: TestApi['request'];
  startService(extraEnv?: Record<string, string>): Promise<ToolsService>;
  close(): Promise<void>;
}

export const newSecretsKey = () => randomBytes(32).toString('base64');

export async function startToolsMesh(env: Record<string, string> = {}): Promise<ToolsMesh> {
  const api = await startTestApi({ CG__TOOLS__HEALTH_PORT: '0', ...env });
  const client = createTenantClient(api.nats);
  const logs: string[] = [];
  const responses: string[] = [];
  const logger = pino({ level: 'debug' }, { write: (line: string) => void logs.push(line) });
  const services: ToolsService[] = [];
  const request: TestApi['request'] = async (method, url, o) => {
    const res: TestResponse = await api.request(method, url, o);
    responses.push(res.raw);
    return res;
  };
  const startService = async (extraEnv: Record<string, string> = {}) => {
    const config = loadConfig({ env: api.serviceEnv('tools', extraEnv) });
    const s = await startToolsService(config, logger);
    services.push(s);
    return s;
  };
  await startService();
  return {
    api,
    client,
    logs,
    responses,
    request,
    startService,
    close: async () => {
      for (const s of services) await s.stop(2_000);
      await client.close();
      await api.close();
    },
  };
}
