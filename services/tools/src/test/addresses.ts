// Addresses for the egress tests: private IPv4 addresses, and every IPv6 form that carries one.
const hex = (v4: string) => {
  const [a, b, c, d] = v4.split('.').map(Number) as [number, number, number, number];
  return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
};
const notHex = (v4: string) => hex(v4).map((h) => (~parseInt(h, 16) & 0xffff).toString(16));

/** Every IPv6 form that carries `v4`, as text a URL or a resolver could give. */
export function embeddings(v4: string): string[] {
  const [hi, lo] = hex(v4) as [string, string];
  const [nhi, nlo] = notHex(v4) as [string, string];
  return [
    `::${v4}`, // IPv4-compatible, dotted
    `::${hi}:${lo}`, // IPv4-compatible, as a URL writes it
    `0:0:0:0:0:0:${v4}`,
    `::ffff:${v4}`, // IPv4-mapped
    `::ffff:${hi}:${lo}`,
    `::ffff:0:${v4}`, // IPv4-translated (RFC 6145)
    `64:ff9b::${v4}`, // NAT64 well-known prefix
    `64:ff9b::${hi}:${lo}`,
    `64:ff9b:1::${hi}:${lo}`, // local-use NAT64, /96
    `64:ff9b:1:${hi}:${lo}::`, // elsewhere in the local-use /48
    `2002:${hi}:${lo}::1`, // 6to4
    `2001:0:4136:e378:8000:63bf:${nhi}:${nlo}`, // Teredo, client obfuscated
    `2001:4860:1:2:0:5efe:${v4}`, // ISATAP under a global prefix
    `2001:4860:1:2:200:5efe:${hi}:${lo}`,
    `fe80::5efe:${v4}`, // ISATAP link-local
  ];
}

export const PRIVATE_V4 = [
  '127.0.0.1', // loopback
  '127.255.255.254',
  '169.254.169.254', // link-local (cloud metadata)
  '10.0.0.1', // RFC 1918
  '172.16.0.1',
  '172.31.255.255',
  '192.168.1.1',
  '100.64.0.1', // CGNAT
  '0.0.0.0', // this network
  '0.1.2.3',
];
