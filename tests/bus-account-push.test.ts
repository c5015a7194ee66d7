// The api pushes the account's revocation list to NATS at start, and a push re-applies the
// account's JetStream (every service's JetStream request fails for that moment). So a start
// whose list the server already holds pushes nothing, and a revocation still reaches the server.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import { publicKeyOf, systemUserCreds } from '@toolmesh/nats-auth';
import { startTestNatsServer, type TestNatsServer } from '@toolmesh/testing';
import { startTestApi, type TestApi } from '../services/api/src/test/support.ts';
import { until } from './support/procs.ts';

let server: TestNatsServer;
let sys: NatsConnection;
const apis: TestApi[] = [];

/** The account JWT the server holds now. */
async function heldJwt(): Promise<string> {
  const account = publicKeyOf(server.keys.account_seed);
  const m = await sys.request(`$SYS.REQ.ACCOUNT.${account}.CLAIMS.LOOKUP`, new Uint8Array(), {
    timeout: 5_000,
  });
  return m.string();
}

const revocationsIn = (jwt: string): Record<string, number> =>
  (
    JSON.parse(Buffer.from(jwt.split('.')[1] ?? '', 'base64url').toString()) as {
      nats: { revocations?: Record<string, number> };
    }
  ).nats.revocations ?? {};

beforeAll(async () => {
  server = await startTestNatsServer();
  sys = await connect({
    servers: server.url,
    authenticator: credsAuthenticator(new TextEncoder().encode(await systemUserCreds(server.keys))),
  });
});
afterAll(async () => {
  for (const a of apis) await a.close();
  await sys?.close();
  await server?.close();
});

it('an api start pushes nothing the server holds already; a revocation is pushed', async () => {
  const before = await heldJwt();
  const first = await startTestApi({}, { natsServer: server });
  apis.push(first);
  const second = await startTestApi({}, { natsServer: server });
  apis.push(second);
  // Give the starts' background pushes time to have happened, had they pushed.
  const p = await first.createProject();
  await new Promise((r) => setTimeout(r, 500));
  expect(await heldJwt()).toBe(before);

  const issued = await first.request('POST', `/v1/projects/${p.id}/bus-credentials`, {
    key: p.key,
    body: { name: 'to-revoke' },
  });
  expect(issued.status, issued.raw).toBe(201);
  const del = await first.request(
    'DELETE',
    `/v1/projects/${p.id}/bus-credentials/${issued.body.id}`,
    { key: p.key },
  );
  expect(del.status, del.raw).toBeLessThan(300);
  const after = await until(async () => {
    const jwt = await heldJwt();
    return issued.body.public_key in revocationsIn(jwt) ? jwt : undefined;
  }, 10_000);
  expect(after).not.toBe(before);
});
