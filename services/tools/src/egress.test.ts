import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { createEgress, egressDeniedIn, isPublicAddress, type Resolve } from './egress.ts';

describe('isPublicAddress', () => {
  it.each([
    '127.0.0.1',
    '127.8.9.10',
    '10.1.2.3',
    '172.16.0.1',
    '192.168.1.1',
    '169.254.169.254', // cloud metadata
    '100.64.0.1', // CGNAT
    '0.0.0.0',
    '224.0.0.1',
    '255.255.255.255',
    '::1',
    '::',
    'fe80::1',
    'fc00::1',
    'fd12:3456::1',
    '::ffff:127.0.0.1',
    '::ffff:10.0.0.1',
    '::ffff:7f00:1',
    'ff02::1',
    'not an address',
  ])('refuses %s', (a) => {
    expect(isPublicAddress(a)).toBe(false);
  });

  it.each(['8.8.8.8', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8'])('allows %s', (a) => {
    expect(isPublicAddress(a)).toBe(true);
  });
});

describe('checkUrl', () => {
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

describe('the dispatcher', () => {
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
