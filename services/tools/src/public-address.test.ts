// Public unicast or not: every IPv6 spelling of a private IPv4 address, and every special-purpose
// range of the IANA registries.
import { describe, expect, it } from 'vitest';
import { isPublicAddress } from './public-address.ts';
import { embeddings, PRIVATE_V4 } from './test/addresses.ts';

describe('isPublicAddress', () => {
  it.each(PRIVATE_V4.flatMap((v4) => [v4, ...embeddings(v4)]))('refuses %s', (a) => {
    expect(isPublicAddress(a)).toBe(false);
  });

  it.each([
    // IPv4 special-purpose registry
    '192.0.0.1', // IETF protocol assignments
    '192.0.0.170', // NAT64 discovery
    '192.0.2.1', // documentation
    '198.51.100.1',
    '203.0.113.1',
    '192.88.99.1', // 6to4 relay anycast
    '198.18.0.1', // benchmarking
    '198.19.255.255',
    '240.0.0.1', // reserved
    '255.255.255.255', // broadcast
    '224.0.0.1', // multicast
    '239.255.255.250',
    // IPv6 special-purpose registry and address space
    '::', // unspecified
    '::1', // loopback
    '0:0:0:0:0:0:0:1',
    'fe80::1', // link-local
    'febf:ffff::1',
    'fec0::1', // site-local (deprecated)
    'fc00::1', // unique-local
    'fd12:3456::1',
    'ff02::1', // multicast
    'ff0e::1',
    '100::1', // discard-only
    '100:0:0:1::1', // dummy prefix
    '2001::1', // Teredo
    '2001:1::1', // IETF protocol assignments
    '2001:2::1', // benchmarking
    '2001:10::1', // ORCHID
    '2001:20::1', // ORCHIDv2
    '2001:db8::1', // documentation
    '3fff::1',
    '2002::1', // 6to4
    '5f00::1', // SRv6 SIDs
    '4000::1', // unallocated (outside 2000::/3)
    'e000::1',
    'fe80::1%eth0', // a zone
    'not an address',
    '',
    '1.2.3',
    '0x7f.0.0.1', // not how a URL or a resolver writes an address
  ])('refuses %s', (a) => {
    expect(isPublicAddress(a)).toBe(false);
  });

  it.each([
    '8.8.8.8',
    '1.1.1.1',
    '2606:4700:4700::1111',
    '2001:4860:4860::8888',
    '::ffff:8.8.8.8',
    '::ffff:808:808',
    '64:ff9b::8.8.8.8', // what DNS64 gives an IPv6-only host for 8.8.8.8
    '2001:4860:1:2:0:5efe:8.8.8.8',
  ])('allows %s', (a) => {
    expect(isPublicAddress(a)).toBe(true);
  });
});
