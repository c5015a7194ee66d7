// Which addresses the tools service may connect to: public unicast only. ipaddr.js classifies
// both families from the IANA special-purpose registries (loopback, private, link-local, CGNAT,
// 0.0.0.0/8, 192.0.0.0/24, documentation, benchmarking, 240.0.0.0/4, broadcast, multicast,
// ::/128, ::1, ULA, discard-only, 6to4, Teredo, NAT64, ORCHID, ...). What it misses is added
// here, from the registries (iana.org/assignments/iana-ipv6-special-registry and
// iana-ipv6-address-space):
// - IPv4-compatible addresses, ::a.b.c.d (::/96, deprecated by RFC 4291 2.5.5.1): ipaddr.js
//   calls `::7f00:1` unicast, and parses the text `::127.0.0.1` as `::ffff:127.0.0.1`, so
//   IPv6 text is first put in the WHATWG URL parser's form (the form a URL's host already has);
// - 64:ff9b:1::/48 (local-use NAT64, RFC 8215): its IPv4 address may sit anywhere, refused;
// - 2001::/23 (IETF protocol assignments, not globally reachable as a block) and the dummy
//   prefix 100:0:0:1::/64 (RFC 9780);
// - everything outside 2000::/3, the only IPv6 space IANA allocates for global unicast;
// - ISATAP interface identifiers (RFC 5214, `::0:5efe:a.b.c.d` or `::200:5efe:a.b.c.d` under any
//   prefix), judged by their IPv4 address.
// An IPv6 address that names an IPv4 one (IPv4-mapped ::ffff:0:0/96, the well-known NAT64
// prefix 64:ff9b::/96) is judged as that IPv4 address: 64:ff9b::8.8.8.8 is how an IPv6-only
// host reaches 8.8.8.8. 6to4 (2002::/16) and Teredo (2001::/32) are refused whatever they embed:
// both are deprecated relays that tunnel to their embedded IPv4 address.
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';

const cidr6 = (text: string) => ipaddr.IPv6.parseCIDR(text);

const GLOBAL_UNICAST = cidr6('2000::/3');
const IPV4_MAPPED = cidr6('::ffff:0:0/96');
const NAT64_WELL_KNOWN = cidr6('64:ff9b::/96');
/** Refused on top of what ipaddr.js refuses (see the header). */
const REFUSED_V6: readonly [ipaddr.IPv6, number][] = [
  cidr6('::/96'), // IPv4-compatible
  cidr6('64:ff9b:1::/48'), // local-use NAT64
  cidr6('100:0:0:1::/64'), // dummy prefix
  cidr6('2001::/23'), // IETF protocol assignments, Teredo among them
  cidr6('2002::/16'), // 6to4
];

function isPublicV4(a: ipaddr.IPv4): boolean {
  return a.range() === 'unicast';
}

const v4Of = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);

function isPublicV6(a: ipaddr.IPv6): boolean {
  const p = a.parts;
  if (a.match(IPV4_MAPPED) || a.match(NAT64_WELL_KNOWN)) return isPublicV4(v4Of(p[6]!, p[7]!));
  if (!a.match(GLOBAL_UNICAST)) return false;
  if (REFUSED_V6.some((range) => a.match(range))) return false;
  if (a.range() !== 'unicast') return false;
  // ISATAP: the IPv4 address is reached through the prefix's ISATAP router (u/g bits ignored).
  if ((p[4]! & 0xfcff) === 0 && p[5] === 0x5efe) return isPublicV4(v4Of(p[6]!, p[7]!));
  return true;
}

/** True when the address (IPv4 or IPv6 text) is public unicast; false for anything else. */
export function isPublicAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return isPublicV4(ipaddr.IPv4.parse(address));
  if (family !== 6) return false;
  let canonical: string;
  try {
    // A zone (fe80::1%eth0) is not a URL host: refused, as every zoned address is link-local.
    canonical = new URL(`http://[${address}]/`).hostname.slice(1, -1);
  } catch {
    return false;
  }
  return isPublicV6(ipaddr.IPv6.parse(canonical));
}
