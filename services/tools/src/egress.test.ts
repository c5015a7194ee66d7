import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { createEgress, egressDeniedIn, type Resolve } from './egress.ts';
import { embeddings, PRIVATE_V4 } from './test/addresses.ts';

// Each private IPv4 address in every IPv6 form that carries it, and the IPv4 spellings a URL
// parser turns into it.
const PRIVATE = PRIVATE_V4.flatMap((v4) => [v4, ...embeddings(v4)]);
const URL_HOSTS = [
  ...PRIVATE.map((a) => (a.includes(':') ? `[${a}]` : a)),
  '0x7f.1',
  '2130706433',
  '0177.0.0.1',
  '127.1',
  '127.0.0.1.',
  '0xa9.0xfe.0xa9.0xfe',
  '[::]',
  '[fe80::1]',
  '[fd00::1]',
];

describe('checkUrl', () => {
  it.each(URL_HOSTS)('refuses http://%s/', async (host) => {
    const strict = createEgress([]);
    try {
      expect(() => strict.checkUrl(new URL(`http://${host}:8080/x`))).toThrow(
        expect.objectContaining({ code: 'egress_denied' }),
      );
    } finally {
      await strict.close();
    }
  });

  it('refuses private IP literals unless listed, and leaves names to the lookup', async () => {
    const strict = createEgress([]);
    const open = createEgress(['127.0.0.1', '[::1]']);
    try {
      for (const u of ['http://127.0.0.1/', 'http://[::1]:80/', 'http://[::ffff:127.0.0.1]/']) {
        expect(() => strict.checkUrl(new URL(u)), u).toThrow(/egress/);
      }
      expect(() => open.checkUrl(new URL('http://127.0.0.1:8080/x'))).not.toThrow();
      expect(() => open.checkUrl(new URL('http://[::1]/x'))).not.toThrow();
      expect(() => strict.checkUrl(new URL('http://localhost/'))).not.toThrow(); // a name
      expect(() => strict.checkUrl(new URL('https://8.8.8.8/'))).not.toThrow();
    } finally {
      await strict.close();
      await open.close();
    }
  });
});

describe('the refusal', () => {
  it('names `pnpm stack --allow-loopback` only for the hosts that flag allows', async () => {
    const strict = createEgress([]);
    const refusal = (u: string) => {
      try {
        strict.checkUrl(new URL(u));
      } catch (err) {
        return (err as Error).message;
      }
      return 'allowed';
    };
    try {
      expect(refusal('http://127.0.0.1:8080/')).toContain('`pnpm stack --allow-loopback`');
      expect(refusal('http://10.0.0.12/')).toBe(
        'egress to 10.0.0.12 is refused: not a public address; an operator may allow it in [tools] allowed_private_hosts',
      );
    } finally {
      await strict.close();
    }
  });
});

describe('the dispatcher', () => {
  it('refuses a name whose every DNS answer is a private address in any form, before connecting', async () => {
    const resolve: Resolve = (host) => {
      const address = decodeURIComponent(host.replace(/\.test$/, '')).replaceAll('-', ':');
      return Promise.resolve([{ address, family: address.includes(':') ? 6 : 4 }]);
    };
    const strict = createEgress([], { resolve });
    try {
      for (const address of PRIVATE) {
        // The name carries the answer: `::127.0.0.1` is asked for as `--127.0.0.1.test`.
        const name = `${address.replaceAll(':', '-')}.test`;
        const err = await request(`http://${name}:9/`, { dispatcher: strict.dispatcher }).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(egressDeniedIn(err)?.details, address).toEqual({ host: name, addresses: [address] });
      }
    } finally {
      await strict.close();
    }
  });

  it('connects to the address its own lookup checked, and refuses a name resolving to loopback', async () => {
    const server = createServer((_req, res) => res.end('reached'));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const port = (server.address() as AddressInfo).port;
    // The name exists only in this resolver: a request that reaches the server went to the
    // address the lookup returned, not to one resolved again elsewhere.
    const resolve: Resolve = (host) =>
      host === 'upstream.test'
        ? Promise.resolve([{ address: '127.0.0.1', family: 4 }])
        : Promise.reject(Object.assign(new Error(`no such host ${host}`), { code: 'ENOTFOUND' }));
    const allowed = createEgress(['upstream.test'], { resolve });
    const strict = createEgress([], { resolve });
    let hits = 0;
    server.on('request', () => hits++);
    try {
      const url = `http://upstream.test:${port}/`;
      const res = await request(url, { dispatcher: allowed.dispatcher });
      expect(await res.body.text()).toBe('reached');
      const err = await request(url, { dispatcher: strict.dispatcher }).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(egressDeniedIn(err)?.details).toEqual({
        host: 'upstream.test',
        addresses: ['127.0.0.1'],
      });
      expect(hits).toBe(1);
    } finally {
      await allowed.close();
      await strict.close();
      server.close();
    }
  });
});
