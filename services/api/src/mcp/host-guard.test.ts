// Which Host and Origin values the MCP endpoints accept (tests/mcp-facade/rebinding.test.ts sends
// them over HTTP to both revisions).
import { describe, expect, it } from 'vitest';
import { createHostCheck, type HostGuardOptions } from './host-guard.ts';

const base: HostGuardOptions = {
  host: '127.0.0.1',
  port: 8080,
  allowedHosts: [],
  allowedOrigins: [],
  publicUrl: '',
};
const verdict = (
  o: Partial<HostGuardOptions>,
  host?: string,
  origin?: string,
  localPort?: number,
) => createHostCheck({ ...base, ...o })({ host, origin, localPort });
const code = (...a: Parameters<typeof verdict>) => {
  const v = verdict(...a);
  return v.ok ? 'ok' : v.code;
};

describe('the MCP endpoints’ Host check', () => {
  it('admits the localhost forms and the api’s own address at its port, and no other', () => {
    for (const host of ['localhost:8080', '127.0.0.1:8080', '[::1]:8080', 'LOCALHOST:8080']) {
      expect(code({}, host), host).toBe('ok');
    }
    expect(code({ host: '10.0.0.5' }, '10.0.0.5:8080')).toBe('ok');
    expect(code({ host: '::1' }, '[::1]:8080')).toBe('ok');
    for (const host of [
      'localhost:3000',
      'localhost',
      'evil.example:8080',
      'localhost.evil.example:8080',
      '127.0.0.1.nip.io:8080',
      '',
      undefined,
      'localhost:8080/x',
    ]) {
      expect(code({}, host), String(host)).toBe('host_not_allowed');
    }
  });

  it('never admits a wildcard listen address as a name', () => {
    expect(code({ host: '0.0.0.0' }, '0.0.0.0:8080')).toBe('host_not_allowed');
    expect(code({ host: '::' }, '[::]:8080')).toBe('host_not_allowed');
    expect(code({ host: '0.0.0.0' }, 'localhost:8080')).toBe('ok');
  });

  it('admits the port the connection came in on (an api started on port 0)', () => {
    expect(code({ port: 0 }, '127.0.0.1:41234', undefined, 41234)).toBe('ok');
    expect(code({ port: 0 }, '127.0.0.1:41235', undefined, 41234)).toBe('host_not_allowed');
  });

  it('admits configured names: with a port at that port, without one at any', () => {
    const o = { allowedHosts: ['api:8080', 'mesh.example.com'] };
    expect(code(o, 'api:8080')).toBe('ok');
    expect(code(o, 'api:9090')).toBe('host_not_allowed');
    expect(code(o, 'mesh.example.com')).toBe('ok');
    expect(code(o, 'mesh.example.com:8443')).toBe('ok');
    expect(code({ allowedHosts: ['mesh.example.com:443'] }, 'mesh.example.com')).toBe('ok');
  });

  it('admits the public URL’s host', () => {
    expect(code({ publicUrl: 'https://mesh.example.com/' }, 'mesh.example.com')).toBe('ok');
  });
});

describe('the MCP endpoints’ Origin check', () => {
  it('passes a request without an Origin (not a browser)', () => {
    expect(code({}, 'localhost:8080', undefined)).toBe('ok');
  });

  it('admits the api’s own pages under any of its names, whatever the scheme', () => {
    expect(code({}, 'localhost:8080', 'http://localhost:8080')).toBe('ok');
    expect(code({}, '127.0.0.1:8080', 'http://localhost:8080')).toBe('ok');
    const proxied = { allowedHosts: ['mesh.example.com'] };
    expect(code(proxied, 'mesh.example.com', 'https://mesh.example.com')).toBe('ok');
  });

  it('refuses another page, a localhost page on another port, and an opaque origin', () => {
    for (const origin of [
      'http://evil.example',
      'http://localhost:3000',
      'null',
      'http://localhost:8080/path',
      'file://',
    ]) {
      expect(code({}, 'localhost:8080', origin), origin).toBe('origin_not_allowed');
    }
  });

  it('admits a configured origin, by scheme, host and port', () => {
    const o = { allowedOrigins: ['https://console.example.com'] };
    expect(code(o, 'localhost:8080', 'https://console.example.com')).toBe('ok');
    expect(code(o, 'localhost:8080', 'https://console.example.com:443')).toBe('ok');
    expect(code(o, 'localhost:8080', 'http://console.example.com')).toBe('origin_not_allowed');
    expect(code(o, 'localhost:8080', 'https://console.example.com:8443')).toBe(
      'origin_not_allowed',
    );
  });

  it('checks the Host first: an allowed Origin does not admit a foreign Host', () => {
    const o = { allowedOrigins: ['https://console.example.com'] };
    expect(code(o, 'evil.example', 'https://console.example.com')).toBe('host_not_allowed');
  });
});
